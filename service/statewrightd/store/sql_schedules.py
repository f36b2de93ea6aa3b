"""Both backends' SQL for schedules (one table, read and written by whole documents).

Named parameters: schedule_id, document (JSON text), next_fire_time, version (the one
read; a write stores version + 1), now, until, limit, after (a schedule id). Rows come
back in ``rows.SCHEDULE`` order.
"""

from __future__ import annotations

from dataclasses import dataclass

from statewrightd.store import rows

_COLUMNS = rows.listed(rows.SCHEDULE)


@dataclass(frozen=True, slots=True)
class ScheduleStatements:
    insert: str  # -> the row, or nothing when the id is taken
    get: str
    list_after: str  # after, limit -> by id
    # The document and next fire time, when the version still is the one read; the
    # claim is released with it -> the row written.
    put: str
    delete: str
    # Up to limit schedules due by now and not claimed (or their claim lapsed), claimed
    # until ``until`` -> their rows, by due time.
    claim: str
    next_due: str  # now -> the earliest next_fire_time not claimed now
    count: str  # -> how many schedules
    # ids -> (workflow_id, status) of those that exist: what a claim's fires need to know
    # of the instances they would start or overlap, in one read for the whole claim.
    statuses: str
    # ids -> (workflow_id, revision) of those that exist: what a replica's watchers missed.
    revisions: str


def _statements(p: str, json: str, skip_locked: str, among: str) -> ScheduleStatements:
    """``p`` writes a named parameter (``:{}`` or ``%({})s``), ``json`` casts the JSON
    parameter, ``skip_locked`` is what the claim's subquery locks with, ``among`` tests
    ``workflow_id`` against the ``ids`` parameter."""

    def n(name: str) -> str:
        return p.format(name)

    return ScheduleStatements(
        insert=f"""
INSERT INTO schedules ({_COLUMNS}, claimed_until)
VALUES ({n("schedule_id")}, {n("document")}{json}, {n("next_fire_time")}, 1, {n("now")},
        {n("now")}, NULL)
ON CONFLICT (schedule_id) DO NOTHING
RETURNING {_COLUMNS}
""",
        get=f"SELECT {_COLUMNS} FROM schedules WHERE schedule_id = {n('schedule_id')}",
        list_after=f"""
SELECT {_COLUMNS} FROM schedules WHERE schedule_id > {n("after")}
 ORDER BY schedule_id LIMIT {n("limit")}
""",
        put=f"""
UPDATE schedules
   SET document = {n("document")}{json}, next_fire_time = {n("next_fire_time")},
       version = version + 1, update_time = {n("now")}, claimed_until = NULL
 WHERE schedule_id = {n("schedule_id")} AND version = {n("version")}
RETURNING {_COLUMNS}
""",
        delete=f"DELETE FROM schedules WHERE schedule_id = {n('schedule_id')}",
        claim=f"""
UPDATE schedules SET claimed_until = {n("until")}
 WHERE schedule_id IN (
       SELECT schedule_id FROM schedules
        WHERE next_fire_time <= {n("now")}
          AND (claimed_until IS NULL OR claimed_until <= {n("now")})
        ORDER BY next_fire_time LIMIT {n("limit")}{skip_locked})
RETURNING {_COLUMNS}
""",
        next_due=f"""
SELECT min(next_fire_time) FROM schedules
 WHERE claimed_until IS NULL OR claimed_until <= {n("now")}
""",
        count="SELECT count(*) FROM schedules",
        statuses=f"SELECT workflow_id, status FROM workflow_instances WHERE {among}",
        revisions=f"SELECT workflow_id, revision FROM workflow_instances WHERE {among}",
    )


SQLITE = _statements(":{}", "", "", "workflow_id IN (SELECT value FROM json_each(:ids))")
# SKIP LOCKED: replicas claiming at once take different schedules instead of waiting.
# The ids as a JSON array, as the other reads by many ids take them; ANY(ARRAY(...)) lets
# Citus prune the read to the shards holding them.
POSTGRES = _statements(
    "%({})s",
    "::jsonb",
    " FOR UPDATE SKIP LOCKED",
    "workflow_id = ANY(ARRAY(SELECT json_array_elements_text(%(ids)s::json)))",
)
