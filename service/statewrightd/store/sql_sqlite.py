"""SQL text for the SQLite backend, kept apart so sqlite.py reads as control flow.

JSON columns hold text and times integer microseconds (see rows.Rows). A step is a few
plain statements inside the batch's ``BEGIN IMMEDIATE`` transaction: SQLite has one
writer, so nothing can change between the compare-and-swap and the inserts after it.
"""

from __future__ import annotations

from statewrightd.store import rows
from statewrightd.store.sql_builder import (
    DEFINITION_COLUMNS,
    HISTORY_COLUMNS,
    INSTANCE_COLUMNS,
    REQUEST_COLUMNS,
    SQLITE,
    TASK_COLUMNS,
    TIMER_COLUMNS,
    instance_standing,
    statements,
)
from statewrightd.store.sql_builder import FINISHED as _FINISHED
from statewrightd.store.sql_builder import KEPT_FOR_PARENT as _KEPT
from statewrightd.store.sql_builder import OPEN_TASK as _OPEN

# Taken: recorded within its window (after the cutoff). An older record answers nothing
# any more, and the step records the id afresh over it.
REQUEST_TAKEN = (
    "SELECT 1 FROM workflow_requests WHERE workflow_id = ? AND request_id = ? AND create_time > ?"
)

CREATE = f"""
INSERT INTO workflow_instances ({INSTANCE_COLUMNS})
VALUES (:workflow_id, :definition, :version, :state, :status, :context, :revision, :error,
        :create_time, :update_time, :expire_time, :recursion_limit, :run, :pause)
ON CONFLICT (workflow_id) DO NOTHING
"""

SAVE = """
UPDATE workflow_instances
   SET version = :version, state = :state, status = :status, context = :context,
       revision = :revision, error = :error, update_time = :update_time,
       expire_time = :expire_time, recursion_limit = :recursion_limit, run = :run,
       pause = :pause
 WHERE workflow_id = :workflow_id AND revision = :expected
"""

INSERT_HISTORY = f"""
INSERT INTO workflow_history ({HISTORY_COLUMNS})
VALUES (:workflow_id, :revision, :h_event, :h_transitions, :h_state, :h_status, :h_context,
        :h_error, :h_time, :h_timers, :h_actor, :h_input, :run)
"""

TIMER_ARMED = "SELECT 1 FROM workflow_timers WHERE workflow_id = ? AND timer_id = ?"
DISARM = "DELETE FROM workflow_timers WHERE workflow_id = ?"
ARM = f"""
INSERT INTO workflow_timers ({TIMER_COLUMNS})
SELECT :workflow_id, json_extract(value, '$.timer_id'), json_extract(value, '$.revision'),
       json_extract(value, '$.transition'), json_extract(value, '$.target'),
       json_extract(value, '$.after'), json_extract(value, '$.due_micros'),
       json_extract(value, '$.trace_parent'), json_extract(value, '$.trace_state')
  FROM json_each(:t_arm)
"""

INSERT_REQUEST = f"""
INSERT INTO workflow_requests ({REQUEST_COLUMNS})
VALUES (:request_id, :workflow_id, :r_method, :r_fingerprint, :r_response, :r_time)
ON CONFLICT (workflow_id, request_id) DO UPDATE
   SET method = excluded.method,
       fingerprint = excluded.fingerprint, response = excluded.response,
       create_time = excluded.create_time
"""

CURRENT_REVISION = "SELECT revision FROM workflow_instances WHERE workflow_id = ?"

TASK_FENCE = (
    "SELECT status, lease_token, attempt, update_time FROM workflow_tasks"
    " WHERE workflow_id = ? AND task_id = ?"
)
FINISH_TASK = """
UPDATE workflow_tasks SET status = :k_finish_status,
       last_error = coalesce(:k_error, last_error), result = coalesce(:k_result, result),
       claimed_until = NULL,
       update_time = :update_time
 WHERE workflow_id = :workflow_id AND task_id = :k_finish_id
"""
CANCEL_TASK = f"""
UPDATE workflow_tasks SET status = 'CANCELLED', update_time = :update_time
 WHERE workflow_id = :workflow_id AND status IN {_OPEN}
   AND task_id IS NOT :k_finish_id
"""
SCHEDULE_TASK = (
    f"INSERT INTO workflow_tasks ({TASK_COLUMNS}) VALUES ("
    + ", ".join(f":{c}" for c in rows.TASK)
    + ")"
)

RELEASE_ITEM = """
UPDATE workflow_tasks SET available_time = :k_release_time, deadline = :k_release_deadline,
       update_time = :update_time
 WHERE workflow_id = :workflow_id AND task_id = :k_release_id AND status = 'SCHEDULED'
"""

WITNESS = (
    f"SELECT {rows.listed(rows.WITNESS)} FROM workflow_history"
    " WHERE workflow_id = ? AND revision = ?"
)


# A lease: a new attempt, a fresh token, and a first lease no longer than first_ms.
_LEASE = """status = 'LEASED', attempt = attempt + 1, lease_token = lower(hex(randomblob(16))),
       attempt_start_time = :now,
       lease_expire_time = min(deadline, :now + min(start_to_close_ms,
           coalesce(heartbeat_ms, start_to_close_ms), :first_ms) * 1000),
       claimed_until = NULL, update_time = :now"""
_READY = f"""queue = :queue AND status IN ('SCHEDULED', 'BACKOFF')
          AND available_time <= :now AND deadline > :now
          AND {rows.unpaused("workflow_tasks")}"""


SQL = statements(
    SQLITE,
    purge_requests="""
DELETE FROM workflow_requests WHERE (workflow_id, request_id) IN (
       SELECT workflow_id, request_id FROM workflow_requests WHERE create_time <= :cutoff
        ORDER BY create_time LIMIT :limit)
""",
    purge_tombstones="""
DELETE FROM workflow_tombstones WHERE workflow_id IN (
       SELECT workflow_id FROM workflow_tombstones WHERE removed_time <= :cutoff
        ORDER BY removed_time LIMIT :limit)
""",
    insert_definition=(
        f"INSERT INTO workflow_definitions ({DEFINITION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (name, version) DO NOTHING"
    ),
    armed_timers=f"""
SELECT {TIMER_COLUMNS} FROM workflow_timers
 WHERE workflow_id IN (SELECT value FROM json_each(:ids))
 ORDER BY workflow_id, due_time
""",
    claim_timers=f"""
UPDATE workflow_timers SET claimed_until = :until
 WHERE (workflow_id, timer_id) IN (
       SELECT workflow_id, timer_id FROM workflow_timers
        WHERE due_time <= :now AND (claimed_until IS NULL OR claimed_until <= :now)
          AND {rows.unpaused("workflow_timers")}
        ORDER BY due_time LIMIT :limit)
RETURNING {TIMER_COLUMNS}
""",
    timer_counts="SELECT count(*), coalesce(sum(due_time <= :now), 0) FROM workflow_timers",
    lease_tasks=f"""
UPDATE workflow_tasks
   SET {_LEASE}
 WHERE (workflow_id, task_id) IN (
       SELECT workflow_id, task_id FROM workflow_tasks
        WHERE {_READY}
        ORDER BY available_time LIMIT :limit)
RETURNING {TASK_COLUMNS}
""",
    ready_tasks=f"""
SELECT {TASK_COLUMNS} FROM workflow_tasks
 WHERE {_READY}
 ORDER BY available_time LIMIT :limit
""",
    lease_chosen=f"""
UPDATE workflow_tasks
   SET {_LEASE}
 WHERE (workflow_id, task_id) IN (
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(:chosen))
RETURNING {TASK_COLUMNS}
""",
    heartbeat_task=f"""
UPDATE workflow_tasks
   SET lease_expire_time = min(deadline, attempt_start_time + start_to_close_ms * 1000,
           :now + coalesce(heartbeat_ms, start_to_close_ms) * 1000),
       heartbeat_details = coalesce(:details, heartbeat_details), update_time = :now
 WHERE workflow_id = :workflow_id AND task_id = :task_id AND lease_token = :token
   AND status = 'LEASED' AND lease_expire_time > :now
RETURNING {TASK_COLUMNS}
""",
    retry_task=f"""
UPDATE workflow_tasks
   SET status = 'BACKOFF', lease_token = NULL, lease_expire_time = NULL,
       available_time = :available, last_error = :error, last_request_id = :request_id,
       claimed_until = NULL, update_time = :now
 WHERE workflow_id = :workflow_id AND task_id = :task_id
   AND lease_token = :token AND status = 'LEASED'
   AND (NOT :expired_only OR lease_expire_time <= :now)
RETURNING {TASK_COLUMNS}
""",
    claim_expired_tasks=f"""
UPDATE workflow_tasks SET claimed_until = :until
 WHERE (workflow_id, task_id) IN (
       SELECT workflow_id, task_id FROM workflow_tasks
        WHERE ((status = 'LEASED' AND lease_expire_time <= :now)
               OR (status IN {_OPEN} AND deadline <= :now))
          AND (claimed_until IS NULL OR claimed_until <= :now)
          AND {rows.unpaused("workflow_tasks")}
        LIMIT :limit)
RETURNING {TASK_COLUMNS}
""",
    open_tasks=f"""
SELECT {TASK_COLUMNS} FROM workflow_tasks
 WHERE workflow_id IN (SELECT value FROM json_each(:ids)) AND status IN {_OPEN}
""",
    load_many=f"""
SELECT {INSTANCE_COLUMNS} FROM workflow_instances
 WHERE workflow_id IN (SELECT value FROM json_each(:ids))
""",
    queue_stats=f"""
SELECT queue,
       coalesce(sum(status IN ('SCHEDULED', 'BACKOFF') AND available_time <= :now), 0),
       min(CASE WHEN status IN ('SCHEDULED', 'BACKOFF') AND available_time <= :now
                THEN available_time END),
       coalesce(sum(status = 'LEASED'), 0)
  FROM workflow_tasks WHERE status IN {_OPEN} GROUP BY queue ORDER BY queue
""",
)


# Removing instances, one statement per table inside the purge's transaction (SQLite has
# one writer: nothing changes between them). :ids is a JSON array of workflow ids.
EXPIRED = f"""
SELECT workflow_id FROM workflow_instances
 WHERE expire_time <= :now AND status IN {_FINISHED} AND {_KEPT}
 ORDER BY expire_time LIMIT :limit
"""
REMOVABLE = f"""
SELECT workflow_id FROM workflow_instances
 WHERE workflow_id = :workflow_id AND status IN {_FINISHED}
   AND (:revision IS NULL OR revision = :revision)
"""
CHILD_TABLES = ("workflow_history", "workflow_timers", "workflow_tasks", "workflow_requests")
REMOVE_CHILDREN = {
    table: f"DELETE FROM {table} WHERE workflow_id IN (SELECT value FROM json_each(:ids))"
    for table in CHILD_TABLES
}
MARK_REMOVED = """
INSERT INTO workflow_tombstones (workflow_id, expire_time, removed_time)
SELECT workflow_id, coalesce(expire_time, :now), :now FROM workflow_instances
 WHERE workflow_id IN (SELECT value FROM json_each(:ids))
ON CONFLICT (workflow_id) DO UPDATE
   SET expire_time = excluded.expire_time, removed_time = excluded.removed_time
"""
REMOVE_INSTANCES = (
    "DELETE FROM workflow_instances WHERE workflow_id IN (SELECT value FROM json_each(:ids))"
)
UNMARK = "DELETE FROM workflow_tombstones WHERE workflow_id = ?"
INSTANCE_STANDING = instance_standing(SQLITE)

# An instance's search rows: replaced as a whole by a save that changes any of its values.
DELETE_SEARCH = "DELETE FROM workflow_search WHERE workflow_id = ?"
INSERT_SEARCH = "INSERT INTO workflow_search (workflow_id, field, text, number) VALUES (?, ?, ?, ?)"
