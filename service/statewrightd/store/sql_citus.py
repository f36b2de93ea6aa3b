"""SQL for Citus: the PostgreSQL statements, as templates run on one shard group.

Every statement here runs inside one of the shard functions (migrations/citus), on the
node that holds the shards, against plain shard tables: ``%1$s`` .. ``%6$s`` name the
shard of each table (``TABLES`` order), ``$1`` is the statement's input (the rows of a
batch as a JSON array, or a JSON object of parameters) and, in a scan, ``$2`` the number
of rows still wanted. They are the PostgreSQL backend's statements (sql_postgres, and
those sql_builder writes for every dialect), with the table names rewritten and the
parameters spelt in the shard dialect (``shard_dialect``) by ``on_shard``; what exists
only here is what PostgreSQL does with other means: a batch's statements that also
write its search values and answer each row by its position in the node's call, and
per-shard counts.
"""

from __future__ import annotations

import re

from statewrightd.domain import OPEN_TASK as OPEN_STATUSES
from statewrightd.store import rows
from statewrightd.store import sql_postgres as q
from statewrightd.store.citus_layout import DISTRIBUTED
from statewrightd.store.sql_builder import (
    FINISHED,
    INSTANCE_COLUMNS,
    KEPT_FOR_PARENT,
    OPEN_TASK,
    POSTGRES,
    TASK_COLUMNS,
    TIMER_COLUMNS,
    Dialect,
    retention_counts,
    task_status_in,
)

# The per-instance tables, in the order the shard functions name their shards.
TABLES = DISTRIBUTED
_TABLE = re.compile(r"\b(" + "|".join(TABLES) + r")\b")
_PARAM = re.compile(r"%\((\w+)\)s")
# How a scan's named parameters arrive: fields of the JSON object $1, cast to their type.
_PARAM_TYPES = {
    "now": "timestamptz",
    "until": "timestamptz",
    "cutoff": "timestamptz",
    "queue": "text",
    "first_ms": "bigint",
    "cap": "bigint",
    "each": "integer",
    "workflow_id": "text",
    "task_id": "text",
    "token": "text",
    "details": "jsonb",
    "revision": "bigint",
    "per_shard": "integer",
}
# Where a template finds its named parameters: in a scan's object, or in the first row of
# a call on rows (every row carries them).
SCAN = "$1"
FIRST_ROW = "$1->0"


def shard_dialect(params: str = SCAN) -> Dialect:
    """How a shard template spells a named parameter: ``limit`` is the rows still wanted
    ($2), any other a field of ``params`` cast to its type."""

    def named(name: str) -> str:
        if name == "limit":
            return "$2"
        return f"({params}->>'{name}')::{_PARAM_TYPES[name]}"

    return Dialect(named=named, positional="$1")


def on_shard(sql: str, params: str = SCAN) -> str:
    """A PostgreSQL statement as a shard template: tables become ``%N$s``, its named
    parameters those of the shard dialect."""
    dialect = shard_dialect(params)
    shaped = _PARAM.sub(lambda match: dialect(match[1]), sql)
    if "%" in shaped:
        raise ValueError(f"a statement with a literal % cannot be a template: {sql[:60]!r}")
    return _TABLE.sub(lambda m: f"%{TABLES.index(m[1]) + 1}$s", shaped)


# -- a batch of steps -----------------------------------------------------------------
# One statement per kind of step (create or save, with or without timer and task work);
# each input row carries its position ``n`` in the node's call and, if the step has one,
# its request id. It answers every row: n, workflow_id, whether its compare-and-swap
# changed it, whether its request id was free, and the task it finishes (for the fence).

_REQUEST_ROW_TYPES = ", n integer" + q.REQUEST_ROW_TYPES


def _answer(tasked: bool) -> str:
    finish = "r.k_finish_id" if tasked else "NULL::text"
    return f"""
SELECT r.n, r.workflow_id, c.workflow_id IS NOT NULL AS changed, r.free,
       {finish} AS k_finish_id
  FROM rows r LEFT JOIN changed c USING (workflow_id)
"""


def _input(columns: str, timed: bool, tasked: bool, searched: bool, *, saved: bool) -> str:
    """The batch's rows; a save's with its own checks (sql_postgres.checked_rows)."""
    return (
        """WITH input AS (
    SELECT * FROM json_to_recordset($1) AS r("""
        + columns
        + q._HISTORY_ROW_TYPES
        + (q._TIMER_ROW_TYPES if timed else "")
        + (q._TASK_ROW_TYPES if tasked else "")
        + (", s_values json" if searched else "")
        + _REQUEST_ROW_TYPES
        + """
    )
),"""
        + q.checked_rows(True, timed and saved, tasked and saved)
        + ","
    )


# A step that carries search values (``s_values``, a JSON array; null: unchanged) replaces
# its instance's search rows when its compare-and-swap wrote it, in the same statement
# (sql_postgres.DELETE_SEARCH and INSERT_SEARCH). The two parts see the same snapshot, so
# the delete removes the rows the save found and never those it inserts.
_SEARCH = """
search_gone AS (
    DELETE FROM workflow_search s USING rows r JOIN changed c USING (workflow_id)
     WHERE s.workflow_id = r.workflow_id AND r.s_values IS NOT NULL
),
search_new AS (
    INSERT INTO workflow_search (workflow_id, field, text, number)
    SELECT r.workflow_id, v.field, v.text, v.number
      FROM rows r JOIN changed USING (workflow_id),
           json_to_recordset(r.s_values) AS v(field text, text text, number float8)
     WHERE r.s_values IS NOT NULL
),"""


def _work(timed: bool, tasked: bool, searched: bool, *, created: bool) -> str:
    return (
        q.rows_timer_and_task_work(timed, tasked, created=created)
        + q._ROWS_HISTORY_INSERT
        + ","
        + (_SEARCH if searched else "")
        + q.REQUEST_RECORDS
        + _answer(tasked)
    )


def _create_rows(timed: bool, tasked: bool, searched: bool) -> str:
    return on_shard(
        _input(
            """
        workflow_id text, definition text, version integer, state text, status text,
        context jsonb, revision bigint, error jsonb, create_time timestamptz,
        update_time timestamptz, expire_time timestamptz, recursion_limit integer,
        run integer, pause jsonb, """,
            timed,
            tasked,
            searched,
            saved=False,
        )
        + """
changed AS (
    INSERT INTO workflow_instances ("""
        + INSTANCE_COLUMNS
        + """)
    SELECT workflow_id, definition, version, state, status, context, revision, error,
           create_time, update_time, expire_time, recursion_limit, run, pause
      FROM rows WHERE free ORDER BY workflow_id
    ON CONFLICT (workflow_id) DO NOTHING
    RETURNING workflow_id
),"""
        + _work(timed, tasked, searched, created=True)
    )


def _save_rows(timed: bool, tasked: bool, searched: bool) -> str:
    return on_shard(
        _input(q.SAVE_ROW_TYPES, timed, tasked, searched, saved=True)
        + """
changed AS ("""
        + q.SAVE_UPDATE
        + q.row_checks(True, timed, tasked)
        + """
    RETURNING w.workflow_id
),"""
        + _work(timed, tasked, searched, created=False)
    )


# By kind: (timer work, task work, search values) of any step of the statement's rows.
_KINDS = [(t, k, s) for t in (False, True) for k in (False, True) for s in (False, True)]
CREATE_ROWS = {kind: _create_rows(*kind) for kind in _KINDS}
SAVE_ROWS = {kind: _save_rows(*kind) for kind in _KINDS}

# Before a batch's saves: their instances' rows locked in one order (by id, within a
# shard; the shard function takes the shards in order), so that two replicas' batches
# over the same instances cannot deadlock (see sql_postgres.LOCK_INSTANCES).
LOCK_ROWS = on_shard("""
SELECT count(*) AS locked FROM (
    SELECT 1 FROM workflow_instances
     WHERE workflow_id = ANY(ARRAY(SELECT d->>'workflow_id' FROM json_array_elements($1) d))
     ORDER BY workflow_id FOR UPDATE) x
""")

# Rows whose compare-and-swap or fence refused them, looked up in a statement of its own:
# it sees the revision (and the task) that the refusing step committed.
DETAIL = on_shard("""
SELECT r.n, w.revision, k.status AS task_status, k.lease_token AS task_token
  FROM json_to_recordset($1) AS r(n integer, workflow_id text, k_finish_id text)
  LEFT JOIN workflow_instances w ON w.workflow_id = r.workflow_id
  LEFT JOIN workflow_tasks k ON k.workflow_id = r.workflow_id AND k.task_id = r.k_finish_id
""")

# -- reads of a few instances, grouped by node -----------------------------------------
_IDS = "ANY(ARRAY(SELECT d->>'workflow_id' FROM json_array_elements($1) d))"
ARMED_TIMERS = on_shard(f"SELECT {TIMER_COLUMNS} FROM workflow_timers WHERE workflow_id = {_IDS}")
LOAD_INSTANCES = on_shard(
    f"SELECT {INSTANCE_COLUMNS} FROM workflow_instances WHERE workflow_id = {_IDS}"
)
OPEN_TASKS = on_shard(
    f"SELECT {TASK_COLUMNS} FROM workflow_tasks"
    f" WHERE workflow_id = {_IDS} AND {task_status_in('status', OPEN_STATUSES)}"
)

# -- one instance's removal and a task's heartbeat: on its node -------------------------
DELETE_WORKFLOW = on_shard(q.DELETE_WORKFLOW, FIRST_ROW)
# Citus refuses a router UPDATE that computes with timestamps (a STABLE operator) on
# columns; on the shard itself it is plain PostgreSQL.
HEARTBEAT_TASK = on_shard(q.SQL.heartbeat_task, FIRST_ROW)

# -- claims and purges that take the oldest first ---------------------------------------
# In two calls per node: each shard's oldest candidates are read (no lock), the oldest
# ``limit`` of them all are chosen, and those are claimed on their nodes, skipping any
# another replica holds by then. PostgreSQL does it in one statement (ORDER BY ... LIMIT
# ... FOR UPDATE SKIP LOCKED); on Citus that statement would span every shard.


def _chosen(sql: str, order_limit: str, keys: str) -> str:
    """``sql`` (a PostgreSQL claim) restricted to the chosen rows (the rows of the call,
    $1), its ``ORDER BY ... LIMIT`` kept: rows that another replica holds are skipped and
    the next chosen ones taken, until the call has claimed what is wanted ($2)."""
    if order_limit not in sql:
        raise ValueError(f"the claim statement no longer reads {order_limit!r}")
    chosen = f"AND ({keys}) IN (SELECT {_fields_of(keys)} FROM json_array_elements($1) e)"
    return on_shard(sql.replace(order_limit, f"{chosen}\n         {order_limit}"), FIRST_ROW)


def _fields_of(keys: str) -> str:
    return ", ".join(f"e->>'{k.strip()}'" for k in keys.split(","))


PEEK_TIMERS = on_shard(f"""
SELECT workflow_id, timer_id, due_time AS sort FROM workflow_timers
 WHERE due_time <= %(now)s AND (claimed_until IS NULL OR claimed_until <= %(now)s)
   AND {rows.unpaused("workflow_timers")}
 ORDER BY due_time LIMIT %(each)s
""")
CLAIM_TIMERS = _chosen(
    q.SQL.claim_timers, "ORDER BY due_time LIMIT %(limit)s", "workflow_id, timer_id"
)
# Whole rows: a poll may choose among them (by size) before it leases.
PEEK_TASKS = on_shard(f"""
SELECT {TASK_COLUMNS}, available_time AS sort FROM workflow_tasks
 WHERE queue = %(queue)s AND status IN ('SCHEDULED', 'BACKOFF')
   AND available_time <= %(now)s AND deadline > %(now)s
   AND {rows.unpaused("workflow_tasks")}
 ORDER BY available_time LIMIT %(each)s
""")
LEASE_TASKS = _chosen(
    q.SQL.lease_tasks, "ORDER BY available_time LIMIT %(limit)s", "workflow_id, task_id"
)
PEEK_EXPIRED = on_shard(f"""
SELECT workflow_id, expire_time AS sort FROM workflow_instances
 WHERE expire_time <= %(now)s AND status IN {FINISHED} AND {KEPT_FOR_PARENT}
 ORDER BY expire_time LIMIT %(each)s
""")
PURGE_EXPIRED = _chosen(q.PURGE_EXPIRED, "ORDER BY expire_time LIMIT %(limit)s", "workflow_id")

# -- scans: run on every shard group of a node, until enough rows came back -----------
CLAIM_EXPIRED_TASKS = on_shard(q.SQL.claim_expired_tasks)
PURGE_REQUESTS = on_shard(q.SQL.purge_requests.rstrip() + "\nRETURNING 1 AS one\n")
PURGE_TOMBSTONES = on_shard(q.SQL.purge_tombstones.rstrip() + "\nRETURNING 1 AS one\n")
NEXT_TIMER_DUE = on_shard(f"""
SELECT min(due_time) AS due FROM workflow_timers
 WHERE (claimed_until IS NULL OR claimed_until <= %(now)s)
   AND {rows.unpaused("workflow_timers")}
""")
TIMER_COUNTS = on_shard("""
SELECT count(*) AS armed, count(*) FILTER (WHERE due_time <= %(now)s) AS due
  FROM workflow_timers
""")
QUEUE_STATS = on_shard(f"""
SELECT queue,
       count(*) FILTER (WHERE status IN ('SCHEDULED', 'BACKOFF') AND available_time <= %(now)s)
           AS ready,
       min(available_time) FILTER (
           WHERE status IN ('SCHEDULED', 'BACKOFF') AND available_time <= %(now)s) AS oldest,
       count(*) FILTER (WHERE status = 'LEASED') AS leased
  FROM workflow_tasks WHERE status IN {OPEN_TASK} GROUP BY queue
""")
RETENTION_COUNTS = on_shard(retention_counts(POSTGRES))

# The columns of rows a scan hands back as JSON objects, in the order the mappers read.
INSTANCE_FIELDS = rows.INSTANCE
TIMER_FIELDS = rows.TIMER
TASK_FIELDS = rows.TASK

# -- re-projection of search values: on the node of each instance ----------------------
# An instance's rows replaced by those given ($1: n, workflow_id, revision, s_values)
# only while it is at the revision they were computed from, its row locked meanwhile (as
# SqlRepository.replace_search does in one PostgreSQL transaction).
REPLACE_SEARCH = on_shard("""
WITH input AS (
    SELECT * FROM json_to_recordset($1)
        AS r(n integer, workflow_id text, revision bigint, s_values json)
),
hit AS (
    SELECT i.n, i.workflow_id, i.s_values FROM input i
      JOIN workflow_instances w ON w.workflow_id = i.workflow_id AND w.revision = i.revision
       FOR UPDATE OF w
),
gone AS (DELETE FROM workflow_search s USING hit h WHERE s.workflow_id = h.workflow_id),
made AS (
    INSERT INTO workflow_search (workflow_id, field, text, number)
    SELECT h.workflow_id, v.field, v.text, v.number
      FROM hit h, json_to_recordset(h.s_values) AS v(field text, text text, number float8)
)
SELECT n, true AS replaced FROM hit
""")

# -- flow control: a limited queue's claim (store/citus_flow.py) -----------------------
# Its leases by concurrency key, on each shard group (summed by the caller).
LEASED_BY_KEY = on_shard("""
SELECT concurrency_key AS key, count(*) AS leased FROM workflow_tasks
 WHERE queue = %(queue)s AND status = 'LEASED' GROUP BY concurrency_key
""")
# Each shard group's oldest ready tasks of each priority (``per_shard`` of each), none of
# a blocked key ($1->'blocked'): the shard's share of sql_flow's ranked_ready window.
# Not locked: the lease (LEASE_TASKS) takes what is still ready when it comes.
RANKED_READY = on_shard(f"""
SELECT c.* FROM generate_series(1, 5) AS p(priority),
LATERAL (SELECT {rows.listed(rows.TASK, "t.")} FROM workflow_tasks t
          WHERE t.queue = %(queue)s AND t.status IN ('SCHEDULED', 'BACKOFF')
            AND t.available_time <= %(now)s AND t.deadline > %(now)s
            AND t.priority = p.priority AND {rows.unpaused("t")}
            AND (t.concurrency_key IS NULL OR NOT t.concurrency_key IN (
                 SELECT json_array_elements_text($1->'blocked')))
          ORDER BY t.available_time LIMIT %(per_shard)s) c
""")

# ListQueues' busiest keys: each shard group's open keyed tasks by queue and key.
KEY_COUNTS = on_shard("""
SELECT queue, concurrency_key AS key,
       count(*) FILTER (WHERE status IN ('SCHEDULED', 'BACKOFF') AND available_time <= %(now)s)
           AS ready,
       count(*) FILTER (WHERE status = 'LEASED') AS leased
  FROM workflow_tasks
 WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF') AND concurrency_key IS NOT NULL
 GROUP BY queue, concurrency_key
""")
