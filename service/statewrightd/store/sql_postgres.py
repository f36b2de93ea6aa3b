"""SQL text for the PostgreSQL backend, kept apart so postgres.py reads as control flow.

A step is one statement: data-modifying CTEs let the history and request inserts select
FROM the compare-and-swap's RETURNING, so they happen exactly when that row's CAS
succeeded, and a failed CAS is an empty result rather than an error that would abort
the surrounding (batch) transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from statewrightd.domain import OPEN_TASK, TaskStatus
from statewrightd.store import rows, sql_flow
from statewrightd.store.sql_builder import (
    DEFINITION_COLUMNS,
    HISTORY_COLUMNS,
    INSTANCE_COLUMNS,
    POSTGRES,
    REQUEST_COLUMNS,
    TASK_COLUMNS,
    TIMER_COLUMNS,
    instance_standing,
    statements,
    task_status_in,
)
from statewrightd.store.sql_builder import FINISHED as _FINISHED
from statewrightd.store.sql_builder import KEPT_FOR_PARENT as _KEPT
from statewrightd.store.sql_builder import OPEN_TASK as _OPEN

# A request id recorded for the instance within its window blocks the step (the runtime
# answers from the stored response instead); one recorded before ``r_cutoff`` answers
# nothing any more, and the step records it afresh (the ON CONFLICT). Two steps racing
# with one new id are steps of one instance: its compare-and-swap lets one of them write.
_REQUEST_FREE = """
free AS (
    SELECT NOT EXISTS (
        SELECT 1 FROM workflow_requests
         WHERE workflow_id = %(workflow_id)s AND request_id = %(request_id)s::text
           AND create_time > %(r_cutoff)s::timestamptz
    ) AS ok
)"""

_HISTORY_AND_REQUEST = (
    """
hist AS (
    INSERT INTO workflow_history ("""
    + HISTORY_COLUMNS
    + """)
    SELECT workflow_id, %(revision)s, %(h_event)s, %(h_transitions)s::jsonb, %(h_state)s,
           %(h_status)s, %(h_context)s::jsonb, %(h_error)s::jsonb, %(h_time)s,
           %(h_timers)s::jsonb, %(h_actor)s, %(h_input)s::jsonb, %(run)s
      FROM changed
), req AS (
    INSERT INTO workflow_requests ("""
    + REQUEST_COLUMNS
    + """)
    SELECT %(request_id)s::text, workflow_id, %(r_method)s, %(r_fingerprint)s,
           %(r_response)s::bytea, %(r_time)s
      FROM changed
     WHERE %(request_id)s::text IS NOT NULL
    ON CONFLICT (workflow_id, request_id) DO UPDATE
       SET method = EXCLUDED.method,
           fingerprint = EXCLUDED.fingerprint, response = EXCLUDED.response,
           create_time = EXCLUDED.create_time
     WHERE workflow_requests.create_time <= %(r_cutoff)s::timestamptz
)
SELECT (SELECT count(*) FROM changed), (SELECT ok FROM free)
"""
)

# A batch's rows that carry request ids (both layouts): each row's request record
# columns, whether its id is free (the per-step ``_REQUEST_FREE``, row by row), and the
# records of the rows whose compare-and-swap wrote. Two steps racing with one request id
# are steps of one instance, and its compare-and-swap lets one of them write: a conflict
# here is with a record out of its window, which the step records afresh.
REQUEST_ROW_TYPES = """, request_id text, r_method text, r_fingerprint text,
        r_response bytea, r_time timestamptz, r_cutoff timestamptz"""
REQUEST_FIELDS = ("request_id", "r_method", "r_fingerprint", "r_response", "r_time", "r_cutoff")
REQUEST_ROW_NAMES = "".join(f", {name}" for name in REQUEST_FIELDS)
_ROW_FREE = """r.request_id IS NULL OR NOT EXISTS (
               SELECT 1 FROM workflow_requests q
                WHERE q.workflow_id = r.workflow_id AND q.request_id = r.request_id
                  AND q.create_time > r.r_cutoff)"""
REQUEST_RECORDS = (
    """
req AS (
    INSERT INTO workflow_requests ("""
    + REQUEST_COLUMNS
    + """)
    SELECT r.request_id, r.workflow_id, r.r_method, r.r_fingerprint, r.r_response, r.r_time
      FROM rows r JOIN changed USING (workflow_id)
     WHERE r.request_id IS NOT NULL
    ON CONFLICT (workflow_id, request_id) DO UPDATE
       SET method = EXCLUDED.method, fingerprint = EXCLUDED.fingerprint,
           response = EXCLUDED.response, create_time = EXCLUDED.create_time
)"""
)


# A step's own parts, in either form of its statement: one step (each value a parameter,
# ``_param``), or a batch's rows (each value a column of ``r``, ``_column``).
#
# A step that fires a timer saves only while the timer is still armed; one that touches
# timers deletes its instance's (it left their state) and inserts what it armed, only when
# its compare-and-swap succeeded. A step that finishes a task saves only while the task is
# as the step saw it (fenced by its lease); one that leaves a task state cancels the open
# task; one that enters one inserts its task. Steps without such work leave them out.
Value = Callable[[str, str], str]


def _param(name: str, cast: str) -> str:
    return f"%({name})s::{cast}" if cast else f"%({name})s"


def _column(name: str, cast: str) -> str:
    return f"r.{name}"


def _fired_armed(v: Value, owner: str) -> str:
    return f"""
       AND ({v("t_fired", "text")} IS NULL OR EXISTS (
            SELECT 1 FROM workflow_timers t
             WHERE t.workflow_id = {owner} AND t.timer_id = {v("t_fired", "text")}))"""


def _timer_work(v: Value, source: str, owner: str, *, created: bool = False) -> str:
    """``created``: a new instance's, which has no timers to disarm (codec's check)."""
    disarmed = f"""
disarmed AS (
    DELETE FROM workflow_timers t USING {source}
     WHERE t.workflow_id = {owner} AND {v("t_disarm", "")}
),"""
    return (
        ("" if created else disarmed)
        + f"""
armed AS (
    INSERT INTO workflow_timers ({TIMER_COLUMNS})
    SELECT {owner}, x.timer_id, x.revision, x.transition, x.target, x.after, x.due_time,
           x.trace_parent, x.trace_state
      FROM {source}, json_to_recordset({v("t_arm", "json")}) AS x({_TIMER_RECORD})
),"""
    )


def _task_fence(v: Value, owner: str) -> str:
    return f"""
       AND ({v("k_finish_id", "text")} IS NULL OR EXISTS (
            SELECT 1 FROM workflow_tasks k
             WHERE k.workflow_id = {owner} AND k.task_id = {v("k_finish_id", "text")}
               AND k.lease_token IS NOT DISTINCT FROM {v("k_fence_token", "text")}
               AND ({v("k_fence_attempt", "integer")} IS NULL
                    OR k.attempt = {v("k_fence_attempt", "")})
               AND ({v("k_fence_seen", "timestamptz")} IS NULL
                    OR k.update_time = {v("k_fence_seen", "")})
               AND ({task_status_in("k.status", [TaskStatus.LEASED])}
                    OR (NOT {v("k_fence_leased", "")}
                        AND {task_status_in("k.status", OPEN_TASK)}))))"""


def _task_work(v: Value, source: str, owner: str, *, created: bool = False) -> str:
    """``created``: a new instance's, which has no task to finish, cancel or release
    (codec's check), only tasks to schedule. Left in, those parts cost a create batch a
    scan of the tasks: planned with a few hundred rows in its join, PostgreSQL read the
    whole table for the tasks of instances it was inserting."""
    scheduled = f"""
task_scheduled AS (
    INSERT INTO workflow_tasks ({TASK_COLUMNS})
    SELECT {rows.listed(rows.TASK, "x.")}
      FROM {source},
           json_populate_recordset(NULL::workflow_tasks, {v("k_schedule", "json")}) AS x
     WHERE {v("k_schedule", "json")} IS NOT NULL
),"""
    if created:
        return scheduled
    return (
        f"""
task_finished AS (
    UPDATE workflow_tasks k
       SET status = {v("k_finish_status", "text")},
           last_error = COALESCE({v("k_error", "jsonb")}, k.last_error),
           result = COALESCE({v("k_result", "jsonb")}, k.result),
           claimed_until = NULL, update_time = {v("update_time", "")}
      FROM {source}
     WHERE k.workflow_id = {owner} AND k.task_id = {v("k_finish_id", "text")}
), task_cancelled AS (
    UPDATE workflow_tasks k SET status = 'CANCELLED', update_time = {v("update_time", "")}
      FROM {source}
     WHERE k.workflow_id = {owner} AND {v("k_cancel", "")}
       AND {task_status_in("k.status", OPEN_TASK)}
       AND k.task_id IS DISTINCT FROM {v("k_finish_id", "text")}
),"""
        + scheduled
        + f"""
task_released AS (
    UPDATE workflow_tasks k
       SET available_time = {v("k_release_time", "timestamptz")},
           deadline = {v("k_release_deadline", "timestamptz")},
           update_time = {v("update_time", "")}
      FROM {source}
     WHERE k.workflow_id = {owner} AND k.task_id = {v("k_release_id", "text")}
       AND {task_status_in("k.status", [TaskStatus.SCHEDULED])}
),"""
    )


_TIMER_RECORD = """timer_id text, revision bigint, transition integer, target text, after text,
        due_time timestamptz, trace_parent text, trace_state text"""
_ONE, _ONE_ID = "changed c", "c.workflow_id"
_FIRED_ARMED = _fired_armed(_param, "%(workflow_id)s")
_TASK_FENCE = _task_fence(_param, "%(workflow_id)s")


def _save(timed: bool, tasked: bool = False) -> str:
    return (
        "WITH"
        + _REQUEST_FREE
        + """, changed AS (
    UPDATE workflow_instances
       SET version = %(version)s, state = %(state)s, status = %(status)s,
           context = %(context)s::jsonb,
           revision = %(revision)s, error = %(error)s::jsonb, update_time = %(update_time)s,
           expire_time = %(expire_time)s, recursion_limit = %(recursion_limit)s, run = %(run)s,
           pause = %(pause)s::jsonb
     WHERE workflow_id = %(workflow_id)s AND revision = %(expected)s
       AND (SELECT ok FROM free)"""
        + (_FIRED_ARMED if timed else "")
        + (_TASK_FENCE if tasked else "")
        + """
    RETURNING workflow_id
),"""
        + _work(timed, tasked)
    )


def _work(timed: bool, tasked: bool, *, created: bool = False) -> str:
    """What a step's statement does after its compare-and-swap, when that succeeded."""
    return (
        (_timer_work(_param, _ONE, _ONE_ID, created=created) if timed else "")
        + (_task_work(_param, _ONE, _ONE_ID, created=created) if tasked else "")
        + _HISTORY_AND_REQUEST
    )


def _create(timed: bool, tasked: bool = False) -> str:
    return (
        "WITH"
        + _REQUEST_FREE
        + """, changed AS (
    INSERT INTO workflow_instances ("""
        + INSTANCE_COLUMNS
        + """)
    SELECT %(workflow_id)s, %(definition)s, %(version)s, %(state)s, %(status)s,
           %(context)s::jsonb, %(revision)s, %(error)s::jsonb, %(create_time)s, %(update_time)s,
           %(expire_time)s, %(recursion_limit)s, %(run)s, %(pause)s::jsonb
     WHERE (SELECT ok FROM free)
    ON CONFLICT (workflow_id) DO NOTHING
    RETURNING workflow_id
),"""
        + _work(timed, tasked, created=True)
    )


def _variants(build: Callable[[bool, bool], str]) -> dict[tuple[bool, bool], str]:
    """Every statement a step may need, by (timer work, task work): built once."""
    return {(t, k): build(t, k) for t in (False, True) for k in (False, True)}


SAVES, CREATES = _variants(_save), _variants(_create)
SAVE, CREATE = SAVES[False, False], CREATES[False, False]

# Batches without request ids take one statement per kind instead of one per row: the
# rows travel as one JSON document (json_to_recordset), which saves most of the
# per-statement cost in both psycopg and PostgreSQL, and costs psycopg one text parameter
# instead of an array per column. h_context absent (NULL) means "the same as context", so
# a step's context crosses the wire once (and every history row stores it: a repair may
# step a finished instance again). The json type (not jsonb) is only scanned once,
# and the jsonb columns parse their values straight from it. The planner guesses 100 rows
# for json_to_recordset whatever the batch: the UPDATE finds its rows through an array
# of ids (an index scan whatever the table's statistics say), not a join it could plan
# as a scan of the whole table.
_ROWS_HISTORY_INSERT = (
    """
hist AS (
    INSERT INTO workflow_history ("""
    + HISTORY_COLUMNS
    + """)
    SELECT r.workflow_id, r.revision, r.h_event, r.h_transitions, r.h_state, r.h_status,
           COALESCE(r.h_context, r.context), r.h_error, r.h_time, r.h_timers, r.h_actor, r.h_input,
           r.run
      FROM rows r JOIN changed USING (workflow_id)
)"""
)
_ROWS_HISTORY = _ROWS_HISTORY_INSERT + "\nSELECT workflow_id FROM changed\n"

_HISTORY_ROW_TYPES = """h_event text, h_transitions jsonb, h_state text, h_status text,
        h_context jsonb, h_error jsonb, h_time timestamptz, h_timers jsonb, h_actor text,
        h_input jsonb"""
_TIMER_ROW_TYPES = ", t_disarm boolean, t_arm json, t_fired text"
_TASK_ROW_TYPES = """, k_schedule json, k_cancel boolean, k_finish_id text, k_finish_status text,
        k_fence_token text, k_fence_attempt integer, k_fence_leased boolean, k_error jsonb,
        k_result jsonb, k_release_id text, k_release_time timestamptz,
        k_release_deadline timestamptz, k_fence_seen timestamptz"""
_TASK_ROW_NAMES = (
    ", k_schedule, k_cancel, k_finish_id, k_finish_status, k_fence_token, k_fence_attempt,"
    " k_fence_leased, k_error, k_result, k_release_id, k_release_time, k_release_deadline,"
    " k_fence_seen"
)

_ROWS, _ROWS_ID = "rows r JOIN changed USING (workflow_id)", "r.workflow_id"


def _own_checks(requested: bool, timed: bool, tasked: bool) -> list[tuple[str, str]]:
    """(column, condition) of what a batch's row must meet on its own: its request id is
    free, the timer it fires is still armed, its task's fence holds."""
    checks = [("free", _ROW_FREE)] if requested else []
    if timed:
        checks.append(("armed", f"TRUE{_fired_armed(_column, _ROWS_ID)}"))
    if tasked:
        checks.append(("fenced", f"TRUE{_task_fence(_column, _ROWS_ID)}"))
    return checks


def checked_rows(requested: bool, timed: bool = False, tasked: bool = False) -> str:
    """The ``rows`` of a batch (from ``input``, its JSON rows), each with its own checks
    evaluated once, as columns. Written in the compare-and-swap's WHERE instead, they were
    evaluated for every pair of rows and instances the planner's nested loop tried: a
    batch of 47 completions looked their tasks up 2,209 times (42 ms of 48)."""
    columns = "".join(
        f", ({condition}) AS {name}" for name, condition in _own_checks(requested, timed, tasked)
    )
    return f"""
rows AS (
    SELECT r.*{columns}
      FROM input r
)"""


def row_checks(requested: bool, timed: bool = False, tasked: bool = False) -> str:
    """What the compare-and-swap asks of each row of ``checked_rows``: its check columns."""
    return "".join(f" AND r.{name}" for name, _ in _own_checks(requested, timed, tasked))


def rows_timer_and_task_work(timed: bool, tasked: bool, *, created: bool = False) -> str:
    """A batch's timer and task work, for its rows that wrote (both layouts)."""
    return (_timer_work(_column, _ROWS, _ROWS_ID, created=created) if timed else "") + (
        _task_work(_column, _ROWS, _ROWS_ID, created=created) if tasked else ""
    )


def _rows_work(timed: bool, tasked: bool, requested: bool = False, *, created: bool = False) -> str:
    """``_work`` for a batch's rows; ``requested``: with their request records, answering
    each row (its id, whether its compare-and-swap wrote, whether its request id was
    free), not only the rows written."""
    work = rows_timer_and_task_work(timed, tasked, created=created)
    if not requested:
        return work + _ROWS_HISTORY
    return (
        work
        + _ROWS_HISTORY_INSERT
        + ","
        + REQUEST_RECORDS
        + """
SELECT r.workflow_id, c.workflow_id IS NOT NULL AS changed, r.free
  FROM rows r LEFT JOIN changed c USING (workflow_id)
"""
    )


def _create_many(timed: bool, tasked: bool = False, requested: bool = False) -> str:
    return (
        f"""WITH {"input" if requested else "rows"} AS (
    SELECT * FROM ROWS FROM (json_to_recordset(%s::json) AS (
        workflow_id text, definition text, version integer, state text, status text,
        context jsonb, revision bigint, error jsonb, create_time timestamptz,
        update_time timestamptz, expire_time timestamptz, recursion_limit integer,
        run integer, pause jsonb, """
        + _HISTORY_ROW_TYPES
        + (_TIMER_ROW_TYPES if timed else "")
        + (_TASK_ROW_TYPES if tasked else "")
        + (REQUEST_ROW_TYPES if requested else "")
        + """
    )) WITH ORDINALITY AS r(workflow_id, definition, version, state, status, context,
                            revision, error, create_time, update_time, expire_time,
                            recursion_limit, run, pause, h_event,
                            h_transitions, h_state, h_status, h_context, h_error, h_time,
                            h_timers, h_actor, h_input"""
        + (", t_disarm, t_arm, t_fired" if timed else "")
        + (_TASK_ROW_NAMES if tasked else "")
        + (REQUEST_ROW_NAMES if requested else "")
        + """, n)
),"""
        + (checked_rows(requested=True) + "," if requested else "")
        + """ changed AS (
    INSERT INTO workflow_instances ("""
        + INSTANCE_COLUMNS
        + """)
    SELECT workflow_id, definition, version, state, status, context, revision, error,
           create_time, update_time, expire_time, recursion_limit, run, pause
      FROM rows"""
        + (" WHERE free" if requested else "")
        + """ ORDER BY n
    ON CONFLICT (workflow_id) DO NOTHING
    RETURNING workflow_id
),"""
        + _rows_work(timed, tasked, requested, created=True)
    )


# A batch's saves: the columns of each row, and the UPDATE that applies each one whose
# expected revision holds (both layouts; Citus adds its own conditions after it).
SAVE_ROW_TYPES = """
        workflow_id text, expected bigint, revision bigint, version integer, state text,
        status text,
        context jsonb, error jsonb, update_time timestamptz, expire_time timestamptz,
        recursion_limit integer, run integer, pause jsonb, """
SAVE_UPDATE = """
    UPDATE workflow_instances w
       SET version = r.version, state = r.state, status = r.status, context = r.context,
           revision = r.revision, error = r.error, update_time = r.update_time,
           expire_time = r.expire_time, recursion_limit = r.recursion_limit, run = r.run,
           pause = r.pause
      FROM rows r
     WHERE w.workflow_id = ANY(ARRAY(SELECT workflow_id FROM rows))
       AND w.workflow_id = r.workflow_id AND w.revision = r.expected"""


def _save_many(timed: bool, tasked: bool = False, requested: bool = False) -> str:
    checked = requested or timed or tasked
    return (
        f"""WITH {"input" if checked else "rows"} AS (
    SELECT * FROM json_to_recordset(%s::json) AS r("""
        + SAVE_ROW_TYPES
        + _HISTORY_ROW_TYPES
        + (_TIMER_ROW_TYPES if timed else "")
        + (_TASK_ROW_TYPES if tasked else "")
        + (REQUEST_ROW_TYPES if requested else "")
        + """
    )
),"""
        + (checked_rows(requested, timed, tasked) + "," if checked else "")
        + """ changed AS ("""
        + SAVE_UPDATE
        + row_checks(requested, timed, tasked)
        + """
    RETURNING w.workflow_id
),"""
        + _rows_work(timed, tasked, requested)
    )


CREATE_MANYS, SAVE_MANYS = _variants(_create_many), _variants(_save_many)
CREATE_MANY, SAVE_MANY = CREATE_MANYS[False, False], SAVE_MANYS[False, False]
# The same for a batch whose steps carry request ids: each row is answered (id, written,
# request id free), since a row may be refused for its request id as well as its CAS.
CREATE_REQUESTS = _variants(lambda t, k: _create_many(t, k, requested=True))
SAVE_REQUESTS = _variants(lambda t, k: _save_many(t, k, requested=True))

# The failed saves' tasks: whether a fence held decides how the step is answered.
TASK_STATES = """
SELECT workflow_id, task_id, status, lease_token FROM workflow_tasks
 WHERE (workflow_id, task_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
"""

# Takes the row locks of a batch's saves in one global order (by id) before the UPDATE,
# whose join order is the planner's: concurrent batches of two replicas cannot deadlock.
# The ids come as a JSON array, for the same reason as the rows above; ANY(ARRAY(...))
# keeps the lookup an index scan (an IN over the set-returning function is planned as
# a hash join over the whole table).
LOCK_INSTANCES = """
SELECT 1 FROM workflow_instances
 WHERE workflow_id = ANY(ARRAY(SELECT json_array_elements_text(%s::json)))
 ORDER BY workflow_id FOR UPDATE
"""

CURRENT_REVISIONS = (
    "SELECT workflow_id, revision FROM workflow_instances WHERE workflow_id = ANY(%s::text[])"
)

READ_BACK_HISTORY = f"""
SELECT {rows.listed(rows.WITNESS, "h.")}
  FROM workflow_history h
  JOIN unnest(%s::text[], %s::bigint[]) AS k(workflow_id, revision)
    ON h.workflow_id = k.workflow_id AND h.revision = k.revision
"""

# Watchers on other replicas learn of new revisions through one coalesced NOTIFY per
# batch transaction (delivered only if it commits); the payload is a hint, and watchers
# read the history table for the facts.
STEPS_CHANNEL = "statewright_steps"
TASKS_CHANNEL = "statewright_tasks"
NOTIFY_STEPS = "SELECT pg_notify(%s, %s)"

# A step alone in its group commit runs outside a transaction block, a transaction of its
# own, and sends its notification itself (delivered only if it commits). It readies no
# task (postgres._one_statement), so the tasks' channel is not among them.
_NOTIFIED = f""",
       (SELECT count(*) FROM (SELECT pg_notify('{STEPS_CHANNEL}', %(n_steps)s)) n)
"""


def _notified(statement: str) -> str:
    return statement.rstrip() + _NOTIFIED


LONE_SAVES = {kind: _notified(s) for kind, s in SAVES.items()}
LONE_CREATES = {kind: _notified(s) for kind, s in CREATES.items()}

BACKEND_ALIVE = "SELECT 1 FROM pg_stat_activity WHERE pid = %s"
TERMINATE_BACKEND = "SELECT pg_terminate_backend(%s, %s)"


_LEASED = task_status_in("status", [TaskStatus.LEASED])

# A lease: a new attempt, a fresh token, and a first lease no longer than first_ms.
_LEASE = """status = 'LEASED', attempt = k.attempt + 1, lease_token = gen_random_uuid()::text,
       attempt_start_time = %(now)s,
       lease_expire_time = LEAST(k.deadline, %(now)s + LEAST(k.start_to_close_ms,
           COALESCE(k.heartbeat_ms, k.start_to_close_ms), %(first_ms)s) * interval '1 ms'),
       claimed_until = NULL, update_time = %(now)s"""
_READY = f"""queue = %(queue)s AND status IN ('SCHEDULED', 'BACKOFF')
           AND available_time <= %(now)s AND deadline > %(now)s
           AND {rows.unpaused("workflow_tasks")}"""


SQL = statements(
    POSTGRES,
    purge_requests="""
DELETE FROM workflow_requests q
 USING (SELECT workflow_id, request_id FROM workflow_requests WHERE create_time <= %(cutoff)s
         ORDER BY create_time LIMIT %(limit)s FOR UPDATE SKIP LOCKED) old
 WHERE q.workflow_id = old.workflow_id AND q.request_id = old.request_id
""",
    purge_tombstones="""
DELETE FROM workflow_tombstones t
 USING (SELECT workflow_id FROM workflow_tombstones WHERE removed_time <= %(cutoff)s
         ORDER BY removed_time LIMIT %(limit)s FOR UPDATE SKIP LOCKED) old
 WHERE t.workflow_id = old.workflow_id
""",
    insert_definition=f"""
INSERT INTO workflow_definitions ({DEFINITION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (name, version) DO NOTHING
RETURNING {DEFINITION_COLUMNS}
""",
    armed_timers=f"""
SELECT {TIMER_COLUMNS} FROM workflow_timers
 WHERE workflow_id = ANY(ARRAY(SELECT json_array_elements_text(%(ids)s::json)))
 ORDER BY workflow_id, due_time
""",
    # SKIP LOCKED: replicas claiming at once take different timers instead of waiting.
    claim_timers=f"""
UPDATE workflow_timers t SET claimed_until = %(until)s
  FROM (SELECT workflow_id, timer_id FROM workflow_timers
         WHERE due_time <= %(now)s AND (claimed_until IS NULL OR claimed_until <= %(now)s)
           AND {rows.unpaused("workflow_timers")}
         ORDER BY due_time LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED) due
 WHERE t.workflow_id = due.workflow_id AND t.timer_id = due.timer_id
RETURNING {rows.listed(rows.TIMER, "t.")}
""",
    timer_counts=(
        "SELECT count(*), count(*) FILTER (WHERE due_time <= %(now)s) FROM workflow_timers"
    ),
    lease_tasks=f"""
UPDATE workflow_tasks k
   SET {_LEASE}
  FROM (SELECT workflow_id, task_id FROM workflow_tasks
         WHERE {_READY}
         ORDER BY available_time LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED) ready
 WHERE k.workflow_id = ready.workflow_id AND k.task_id = ready.task_id
RETURNING {rows.listed(rows.TASK, "k.")}
""",
    ready_tasks=f"""
SELECT {rows.listed(rows.TASK)} FROM workflow_tasks
 WHERE {_READY}
 ORDER BY available_time LIMIT %(limit)s
   FOR UPDATE SKIP LOCKED
""",
    lease_chosen=f"""
UPDATE workflow_tasks k
   SET {_LEASE}
  FROM unnest(%(chosen_workflows)s::text[], %(chosen_tasks)s::text[])
       AS ready(workflow_id, task_id)
 WHERE k.workflow_id = ready.workflow_id AND k.task_id = ready.task_id
RETURNING {rows.listed(rows.TASK, "k.")}
""",
    heartbeat_task=f"""
UPDATE workflow_tasks
   SET lease_expire_time = LEAST(deadline, attempt_start_time + start_to_close_ms * interval '1 ms',
           %(now)s + COALESCE(heartbeat_ms, start_to_close_ms) * interval '1 ms'),
       heartbeat_details = COALESCE(%(details)s::jsonb, heartbeat_details), update_time = %(now)s
 WHERE workflow_id = %(workflow_id)s AND task_id = %(task_id)s AND lease_token = %(token)s
   AND {_LEASED} AND lease_expire_time > %(now)s
RETURNING {TASK_COLUMNS}
""",
    retry_task=f"""
UPDATE workflow_tasks
   SET status = 'BACKOFF', lease_token = NULL, lease_expire_time = NULL,
       available_time = %(available)s, last_error = %(error)s::jsonb,
       last_request_id = %(request_id)s, claimed_until = NULL, update_time = %(now)s
 WHERE workflow_id = %(workflow_id)s AND task_id = %(task_id)s
   AND lease_token = %(token)s AND {_LEASED}
   AND (NOT %(expired_only)s OR lease_expire_time <= %(now)s)
RETURNING {TASK_COLUMNS}
""",
    claim_expired_tasks=f"""
UPDATE workflow_tasks k SET claimed_until = %(until)s
  FROM (SELECT workflow_id, task_id FROM workflow_tasks
         WHERE ((status = 'LEASED' AND lease_expire_time <= %(now)s)
                OR (status IN {_OPEN} AND deadline <= %(now)s))
           AND (claimed_until IS NULL OR claimed_until <= %(now)s)
           AND {rows.unpaused("workflow_tasks")}
         LIMIT %(limit)s FOR UPDATE SKIP LOCKED) due
 WHERE k.workflow_id = due.workflow_id AND k.task_id = due.task_id
RETURNING {rows.listed(rows.TASK, "k.")}
""",
    open_tasks=f"""
SELECT {TASK_COLUMNS} FROM workflow_tasks
 WHERE workflow_id = ANY(ARRAY(SELECT json_array_elements_text(%(ids)s::json)))
   AND {task_status_in("status", OPEN_TASK)}
""",
    load_many=f"""
SELECT {INSTANCE_COLUMNS} FROM workflow_instances
 WHERE workflow_id = ANY(ARRAY(SELECT json_array_elements_text(%(ids)s::json)))
""",
    queue_stats=f"""
SELECT queue,
       count(*) FILTER (WHERE status IN ('SCHEDULED', 'BACKOFF') AND available_time <= %(now)s),
       min(available_time) FILTER (
           WHERE status IN ('SCHEDULED', 'BACKOFF') AND available_time <= %(now)s),
       count(*) FILTER (WHERE status = 'LEASED')
  FROM workflow_tasks WHERE status IN {_OPEN} GROUP BY queue ORDER BY queue
""",
)


# A queue with flow control is claimed under its config row's lock (store/flow.py). These
# claim a queue only while it has no config, checked in the same statement: the unlimited
# claim keeps its round trips, and only a poll that finds nothing asks about limits.
_NO_LIMITS = " AND NOT EXISTS (SELECT 1 FROM task_queues c WHERE c.queue = %(queue)s)"
UNLIMITED_LEASE = SQL.lease_tasks.replace(_READY, _READY + _NO_LIMITS)
UNLIMITED_READY = SQL.ready_tasks.replace(_READY, _READY + _NO_LIMITS)
assert SQL.lease_tasks != UNLIMITED_LEASE and SQL.ready_tasks != UNLIMITED_READY

# A poll's claim in one statement, committed on its own: no BEGIN, no COMMIT, no read of
# the ready tasks before their lease. It leases, oldest first, the ready tasks of a queue
# without limits that surely fit in the answer's room (%(room)s bytes), by a generous
# bound of each one's share of the answer: six times its row's text, plus a kilobyte. A
# Struct from JSON is at most about four times the JSON's text (a list of one-digit
# numbers); every other field of a task is a column's text, twice at most (the workflow
# id), or a number, a time, a tag and a length (the kilobyte). One row at least: how many
# tasks were ready, whether the queue has limits, then each leased task's TASK columns
# (NULLs when none was leased) and its instance's INSTANCE columns (NULLs for an item of
# a fan-out): the poll's read of the instances comes with the lease, in the same round
# trip. Ready tasks and no lease: the first one's bound did not fit, and the poll reads
# them and chooses exactly.
FITTING_BOUND = "6 * octet_length(workflow_tasks::text) + 1024"
FITTING_LEASE = f"""
WITH ready AS (
    SELECT workflow_id, task_id, available_time, {FITTING_BOUND} AS bound
      FROM workflow_tasks
     WHERE {_READY}{_NO_LIMITS}
     ORDER BY available_time LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
), fitting AS (
    SELECT workflow_id, task_id
      FROM (SELECT workflow_id, task_id,
                   sum(bound) OVER (ORDER BY available_time, workflow_id, task_id) AS upto
              FROM ready) running
     WHERE upto <= %(room)s
), leased AS (
    UPDATE workflow_tasks k
       SET {_LEASE}
      FROM fitting
     WHERE k.workflow_id = fitting.workflow_id AND k.task_id = fitting.task_id
    RETURNING {rows.listed(rows.TASK, "k.")}
)
SELECT (SELECT count(*) FROM ready), EXISTS (SELECT 1 FROM task_queues c WHERE c.queue = %(queue)s),
       leased.*, {rows.listed(rows.INSTANCE, "w.")}
  FROM (SELECT 1) one LEFT JOIN leased ON true
  LEFT JOIN workflow_instances w
    ON w.workflow_id = leased.workflow_id AND leased.item_index IS NULL
"""

# Flow control's statements, with the claims above.
FLOW = sql_flow.with_lease(
    sql_flow.POSTGRES, SQL.lease_chosen, (UNLIMITED_LEASE, UNLIMITED_READY), FITTING_LEASE
)


# Removing instances: everything of theirs, child tables first (their rows are counted),
# in one statement. ``doomed`` picks the instances and locks them; the rest deletes.
def _removal(doomed: str, tombstone: str) -> str:
    children = "".join(
        f"""
), {name} AS (
    DELETE FROM {table} c USING doomed d WHERE c.workflow_id = d.workflow_id
    RETURNING 1"""
        for name, table in _CHILDREN
    )
    # Named columns: Citus hands a node's answer back as one JSON object.
    counts = ", ".join(f"(SELECT count(*) FROM {name}) AS {name}" for name, _ in _CHILDREN)
    return f"""
WITH doomed AS ({doomed}{children}
), instances AS (
    DELETE FROM workflow_instances w USING doomed d
     WHERE w.workflow_id = d.workflow_id AND w.status IN {_FINISHED}
    RETURNING w.workflow_id, w.expire_time
), tombstones AS ({tombstone}
)
SELECT (SELECT coalesce(json_agg(workflow_id ORDER BY workflow_id), '[]') FROM instances)
           AS ids,
       {counts}
"""


# Every table that holds rows of an instance, with the name of its rows' count.
_CHILDREN = (
    ("history", "workflow_history"),
    ("timers", "workflow_timers"),
    ("tasks", "workflow_tasks"),
    ("requests", "workflow_requests"),
)


# The purge: finished instances past their expire_time, oldest first. SKIP LOCKED: two
# replicas purging at once take different instances instead of waiting for each other.
# Each removed instance leaves a tombstone.
PURGE_EXPIRED = _removal(
    f"""
    SELECT workflow_id FROM workflow_instances
     WHERE expire_time <= %(now)s AND status IN {_FINISHED} AND {_KEPT}
     ORDER BY expire_time LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED""",
    """
    INSERT INTO workflow_tombstones (workflow_id, expire_time, removed_time)
    SELECT workflow_id, coalesce(expire_time, %(now)s), %(now)s FROM instances
    ON CONFLICT (workflow_id) DO UPDATE
       SET expire_time = EXCLUDED.expire_time, removed_time = EXCLUDED.removed_time""",
)

# DeleteWorkflow: one finished instance at the revision its caller saw (any revision when
# NULL). It leaves no tombstone and takes away any an earlier instance of that id left.
DELETE_WORKFLOW = _removal(
    f"""
    SELECT workflow_id FROM workflow_instances
     WHERE workflow_id = %(workflow_id)s AND status IN {_FINISHED}
       AND (%(revision)s::bigint IS NULL OR revision = %(revision)s::bigint)
       FOR UPDATE""",
    """
    DELETE FROM workflow_tombstones WHERE workflow_id = %(workflow_id)s
       AND EXISTS (SELECT 1 FROM instances)""",
)

INSTANCE_STANDING = instance_standing(POSTGRES)

# The search rows of saved instances: those of an instance whose values changed are
# replaced as a whole. %s: the ids; then a JSON array of rows.
DELETE_SEARCH = "DELETE FROM workflow_search WHERE workflow_id = ANY(%s)"
INSERT_SEARCH = """
INSERT INTO workflow_search (workflow_id, field, text, number)
SELECT workflow_id, field, text, number
  FROM jsonb_to_recordset(%s::jsonb) AS x(workflow_id text, field text, text text, number float8)
"""
