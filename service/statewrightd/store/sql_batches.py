"""Both SQL backends' statements for batch operations (BatchStore of store/repository.py):
a batch's row, its document written whole, and one row per instance it matched.

Named parameters: batch_id, document (JSON text), state, matched, now, end_time, owner,
until, before, after (a workflow id), after_time and after_id (a listing's position), limit, ids
(a JSON array of workflow ids), ends (a JSON array of objects with workflow_id, failed,
code, reason and message), done and failed (how many items just ended each way). Batch
rows come back in ``rows.BATCH`` order, failures in ``rows.BATCH_FAILURE`` order.
"""

from __future__ import annotations

from dataclasses import dataclass

from statewrightd.store import rows

_COLUMNS = rows.listed(rows.BATCH)
# A batch whose items have all ended once these end too: it completes with them.
_COMPLETES = "state = 'RUNNING' AND done + failed + {done} + {failed} >= matched"


@dataclass(frozen=True, slots=True)
class BatchStatements:
    insert: str  # -> the row, or nothing when the id is taken
    insert_items: str  # batch_id, ids: every item pending
    get: str
    # The batch's state, its row locked until the transaction ends where the database
    # locks rows (SQLite's writer holds the whole database): the ends of one batch are
    # counted one transaction after the other.
    lock: str
    # owner, now, until: the lease of one RUNNING batch, the owner's own first, then the
    # oldest free one -> its row.
    claim: str
    pending: str  # batch_id, after, limit -> workflow ids of pending items, by id
    # batch_id, ends, now: ends each listed item that is still pending -> the ``failed``
    # of each item it ended.
    end_items: str
    # batch_id, done, failed, now: the counts grown, completed when nothing is left -> row
    count_ends: str
    cancel: str  # batch_id, document, now: a RUNNING batch cancelled -> the row
    failures: str  # batch_id, after, limit -> BATCH_FAILURE rows, by workflow id
    # before, limit -> (batch_id, matched) of finished batches that ended by ``before``,
    # oldest first, locked (skipping those another purge holds, where rows are locked)
    doomed: str
    purge_items: str  # ids -> the items of those batches deleted
    purge: str  # ids -> those batches deleted
    # (after a position, in a state) -> up to limit rows, newest first.
    listings: dict[tuple[bool, bool], str]


def _listing(n: str, after: bool, state: bool) -> str:
    conditions = [f"state = {n.format('state')}"] if state else []
    if after:
        position = f"({n.format('after_time')}, {n.format('after_id')})"
        conditions.append(f"(create_time, batch_id) < {position}")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return (
        f"SELECT {_COLUMNS} FROM batch_operations{where}"
        f" ORDER BY create_time DESC, batch_id DESC LIMIT {n.format('limit')}"
    )


def _doomed(p: str, skip_locked: str) -> str:
    return f"""
SELECT batch_id, matched FROM batch_operations
 WHERE state <> 'RUNNING' AND end_time <= {p.format("before")}
 ORDER BY end_time, batch_id LIMIT {p.format("limit")}{skip_locked}
"""


def _statements(p: str, json: str, for_update: str, ids: str, ends: str) -> BatchStatements:
    """``p`` writes a named parameter (``:{}`` or ``%({})s``), ``json`` casts the document
    parameter, ``for_update`` locks the rows a SELECT reads (with SKIP LOCKED: the claim's,
    the purge's), ``ids`` is a table of the ``ids`` parameter's values (column ``value``),
    ``ends`` a SELECT of the ``ends`` parameter's objects (end_id, end_failed, end_code,
    end_reason, end_message)."""
    n = p.format
    completes = _COMPLETES.format(done=n("done"), failed=n("failed"))
    skip_locked = f"{for_update} SKIP LOCKED" if for_update else ""
    return BatchStatements(
        insert=f"""
INSERT INTO batch_operations ({_COLUMNS}, lease_owner, lease_until)
VALUES ({n("batch_id")}, {n("document")}{json}, {n("state")}, {n("matched")}, 0, 0, 1,
        {n("now")}, {n("now")}, {n("end_time")}, NULL, NULL)
ON CONFLICT (batch_id) DO NOTHING
RETURNING {_COLUMNS}
""",
        insert_items=f"""
INSERT INTO batch_items (batch_id, workflow_id) SELECT {n("batch_id")}, value FROM {ids}
""",
        get=f"SELECT {_COLUMNS} FROM batch_operations WHERE batch_id = {n('batch_id')}",
        lock=f"SELECT state FROM batch_operations WHERE batch_id = {n('batch_id')}{for_update}",
        claim=f"""
UPDATE batch_operations SET lease_owner = {n("owner")}, lease_until = {n("until")}
 WHERE batch_id = (
       SELECT batch_id FROM batch_operations
        WHERE state = 'RUNNING'
          AND (lease_owner = {n("owner")} OR lease_until IS NULL
               OR lease_until <= {n("now")})
        ORDER BY CASE WHEN lease_owner = {n("owner")} THEN 0 ELSE 1 END, create_time,
                 batch_id
        LIMIT 1{skip_locked})
RETURNING {_COLUMNS}
""",
        pending=f"""
SELECT workflow_id FROM batch_items
 WHERE batch_id = {n("batch_id")} AND NOT ended AND workflow_id > {n("after")}
 ORDER BY workflow_id LIMIT {n("limit")}
""",
        # Materialized, the ends are the outer loop, each item found by its key (SQLite
        # would otherwise read the ends' JSON again for every item of the batch).
        end_items=f"""
WITH e AS MATERIALIZED ({ends})
UPDATE batch_items
   SET ended = TRUE, failed = e.end_failed, code = e.end_code, reason = e.end_reason,
       message = e.end_message, end_time = {n("now")}
  FROM e
 WHERE batch_items.batch_id = {n("batch_id")} AND batch_items.workflow_id = e.end_id
   AND NOT batch_items.ended
RETURNING failed
""",
        count_ends=f"""
UPDATE batch_operations
   SET done = done + {n("done")}, failed = failed + {n("failed")}, version = version + 1,
       update_time = {n("now")},
       state = CASE WHEN {completes} THEN 'COMPLETED' ELSE state END,
       end_time = CASE WHEN {completes} THEN {n("now")} ELSE end_time END,
       lease_owner = CASE WHEN {completes} THEN NULL ELSE lease_owner END,
       lease_until = CASE WHEN {completes} THEN NULL ELSE lease_until END
 WHERE batch_id = {n("batch_id")}
RETURNING {_COLUMNS}
""",
        cancel=f"""
UPDATE batch_operations
   SET state = 'CANCELLED', document = {n("document")}{json}, version = version + 1,
       update_time = {n("now")}, end_time = {n("now")}, lease_owner = NULL,
       lease_until = NULL
 WHERE batch_id = {n("batch_id")} AND state = 'RUNNING'
RETURNING {_COLUMNS}
""",
        failures=f"""
SELECT {rows.listed(rows.BATCH_FAILURE)} FROM batch_items
 WHERE batch_id = {n("batch_id")} AND failed AND workflow_id > {n("after")}
 ORDER BY workflow_id LIMIT {n("limit")}
""",
        doomed=_doomed(p, skip_locked),
        purge_items=f"DELETE FROM batch_items WHERE batch_id IN (SELECT value FROM {ids})",
        purge=f"DELETE FROM batch_operations WHERE batch_id IN (SELECT value FROM {ids})",
        listings={(a, s): _listing(p, a, s) for a in (False, True) for s in (False, True)},
    )


_SQLITE_ENDS = """SELECT json_extract(value, '$.workflow_id') AS end_id,
        json_extract(value, '$.failed') AS end_failed,
        json_extract(value, '$.code') AS end_code,
        json_extract(value, '$.reason') AS end_reason,
        json_extract(value, '$.message') AS end_message
   FROM json_each(:ends)"""
SQLITE = _statements(":{}", "", "", "json_each(:ids)", _SQLITE_ENDS)
# Replicas claiming at once take different batches (SKIP LOCKED) instead of waiting.
POSTGRES = _statements(
    "%({})s",
    "::jsonb",
    " FOR UPDATE",
    "json_array_elements_text(%(ids)s::json)",
    """SELECT workflow_id AS end_id, failed AS end_failed, code AS end_code,
        reason AS end_reason, message AS end_message
   FROM json_to_recordset(%(ends)s::json)
        AS r(workflow_id text, failed boolean, code text, reason text, message text)""",
)
