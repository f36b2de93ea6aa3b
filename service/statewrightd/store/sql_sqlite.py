"""SQL text for the SQLite backend, kept apart so sqlite.py reads as control flow.

JSON columns hold text and times integer microseconds (see rows.Rows). A step is a few
plain statements inside the batch's ``BEGIN IMMEDIATE`` transaction: SQLite has one
writer, so nothing can change between the compare-and-swap and the inserts after it.
"""

from __future__ import annotations

from statewrightd.store import rows
from statewrightd.store.sqlbase import Statements

INSTANCE_COLUMNS = rows.listed(rows.INSTANCE)
HISTORY_COLUMNS = rows.listed(rows.HISTORY)
REQUEST_COLUMNS = rows.listed(rows.REQUEST)
DEFINITION_COLUMNS = rows.listed(rows.DEFINITION)
TIMER_COLUMNS = rows.listed(rows.TIMER)
TASK_COLUMNS = rows.listed(rows.TASK)
TOMBSTONE_COLUMNS = rows.listed(rows.TOMBSTONE)
_OPEN = "('SCHEDULED', 'LEASED', 'BACKOFF')"
_FINISHED = "('COMPLETED', 'FAILED', 'CANCELLED')"
# A finished instance's last history row stores no context: readers take the instance's.
HISTORY_READ = ", ".join(
    "coalesce(h.context, w.context)" if c == "context" else f"h.{c}" for c in rows.HISTORY
)

# Taken: recorded within its window (after the cutoff). An older record answers nothing
# any more, and the step records the id afresh over it.
REQUEST_TAKEN = "SELECT 1 FROM workflow_requests WHERE request_id = ? AND create_time > ?"

CREATE = f"""
INSERT INTO workflow_instances ({INSTANCE_COLUMNS})
VALUES (:workflow_id, :definition, :version, :state, :status, :context, :revision, :error,
        :create_time, :update_time, :expire_time)
ON CONFLICT (workflow_id) DO NOTHING
"""

SAVE = """
UPDATE workflow_instances
   SET state = :state, status = :status, context = :context, revision = :revision,
       error = :error, update_time = :update_time, expire_time = :expire_time
 WHERE workflow_id = :workflow_id AND revision = :expected
"""

INSERT_HISTORY = f"""
INSERT INTO workflow_history ({HISTORY_COLUMNS})
VALUES (:workflow_id, :revision, :h_event, :h_transitions, :h_state, :h_status, :h_context,
        :h_error, :h_time, :h_timers, :h_actor)
"""

TIMER_ARMED = "SELECT 1 FROM workflow_timers WHERE workflow_id = ? AND timer_id = ?"
DISARM = "DELETE FROM workflow_timers WHERE workflow_id = ?"
ARM = f"""
INSERT INTO workflow_timers ({TIMER_COLUMNS})
SELECT :workflow_id, json_extract(value, '$.timer_id'), json_extract(value, '$.revision'),
       json_extract(value, '$.transition'), json_extract(value, '$.target'),
       json_extract(value, '$.after'), json_extract(value, '$.due_micros')
  FROM json_each(:t_arm)
"""

INSERT_REQUEST = f"""
INSERT INTO workflow_requests ({REQUEST_COLUMNS})
VALUES (:request_id, :workflow_id, :r_method, :r_fingerprint, :r_response, :r_time)
ON CONFLICT (request_id) DO UPDATE
   SET workflow_id = excluded.workflow_id, method = excluded.method,
       fingerprint = excluded.fingerprint, response = excluded.response,
       create_time = excluded.create_time
"""

CURRENT_REVISION = "SELECT revision FROM workflow_instances WHERE workflow_id = ?"

TASK_FENCE = (
    "SELECT status, lease_token, attempt FROM workflow_tasks WHERE workflow_id = ? AND task_id = ?"
)
FINISH_TASK = """
UPDATE workflow_tasks SET status = :k_finish_status,
       last_error = coalesce(:k_error, last_error), claimed_until = NULL,
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

WITNESS = (
    f"SELECT {rows.listed(rows.WITNESS)} FROM workflow_history"
    " WHERE workflow_id = ? AND revision = ?"
)


def _list_instances(by_definition: bool, by_status: bool) -> str:
    """Keyset page over seq; a filter is in the statement only when set."""
    where = " AND ".join(
        ["seq > :after"]
        + ["definition = :definition"] * by_definition
        + ["status = :status"] * by_status
    )
    return (
        f"SELECT seq, {INSTANCE_COLUMNS} FROM workflow_instances"
        f" WHERE {where} ORDER BY seq LIMIT :limit"
    )


def _list_tasks(by_queue: bool, by_workflow: bool, by_status: bool) -> str:
    """Keyset page over (schedule_time, workflow_id, task_id); filters only when set."""
    where = ["(schedule_time, workflow_id, task_id) > (:after_time, :after_w, :after_t)"]
    where += ["queue = :queue"] * by_queue
    where += ["workflow_id = :workflow_id"] * by_workflow
    where += ["status = :status"] * by_status
    return (
        f"SELECT {TASK_COLUMNS} FROM workflow_tasks WHERE {' AND '.join(where)}"
        " ORDER BY schedule_time, workflow_id, task_id LIMIT :limit"
    )


# A lease: a new attempt, a fresh token, and a first lease no longer than first_ms.
_LEASE = """status = 'LEASED', attempt = attempt + 1, lease_token = lower(hex(randomblob(16))),
       attempt_start_time = :now,
       lease_expire_time = min(deadline, :now + min(start_to_close_ms,
           coalesce(heartbeat_ms, start_to_close_ms), :first_ms) * 1000),
       claimed_until = NULL, update_time = :now"""
_READY = """queue = :queue AND status IN ('SCHEDULED', 'BACKOFF')
          AND available_time <= :now AND deadline > :now"""


SQL = Statements(
    load=f"SELECT {INSTANCE_COLUMNS} FROM workflow_instances WHERE workflow_id = ?",
    history_after=(
        f"SELECT {HISTORY_READ} FROM workflow_history h"
        " JOIN workflow_instances w ON w.workflow_id = h.workflow_id"
        " WHERE h.workflow_id = ? AND h.revision > ? ORDER BY h.revision LIMIT ?"
    ),
    lookup_request=(
        f"SELECT {REQUEST_COLUMNS} FROM workflow_requests WHERE request_id = ? AND create_time > ?"
    ),
    purge_requests="""
DELETE FROM workflow_requests WHERE request_id IN (
       SELECT request_id FROM workflow_requests WHERE create_time <= :cutoff
        ORDER BY create_time LIMIT :limit)
""",
    purge_tombstones="""
DELETE FROM workflow_tombstones WHERE workflow_id IN (
       SELECT workflow_id FROM workflow_tombstones WHERE removed_time <= :cutoff
        ORDER BY removed_time LIMIT :limit)
""",
    lookup_tombstone=f"SELECT {TOMBSTONE_COLUMNS} FROM workflow_tombstones WHERE workflow_id = ?",
    retention_counts="""
SELECT (SELECT count(*) FROM (SELECT 1 FROM workflow_instances WHERE expire_time <= :now
                               LIMIT :cap)),
       (SELECT min(expire_time) FROM workflow_instances WHERE expire_time <= :now),
       (SELECT count(*) FROM (SELECT 1 FROM workflow_requests WHERE create_time <= :cutoff
                               LIMIT :cap)),
       (SELECT min(create_time) FROM workflow_requests WHERE create_time <= :cutoff)
""",
    # No RETURNING (SQLite before 3.35 has none): the row is always read back.
    insert_definition=(
        f"INSERT INTO workflow_definitions ({DEFINITION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (name, version) DO NOTHING"
    ),
    get_definition=(
        f"SELECT {DEFINITION_COLUMNS} FROM workflow_definitions WHERE name = ? AND version = ?"
    ),
    get_latest_definition=(
        f"SELECT {DEFINITION_COLUMNS} FROM workflow_definitions"
        " WHERE name = ? ORDER BY version DESC LIMIT 1"
    ),
    list_definitions=(
        f"SELECT {DEFINITION_COLUMNS} FROM workflow_definitions ORDER BY name, version"
    ),
    list_instances=_list_instances,
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
        ORDER BY due_time LIMIT :limit)
RETURNING {TIMER_COLUMNS}
""",
    next_timer_due="""
SELECT due_time FROM workflow_timers
 WHERE claimed_until IS NULL OR claimed_until <= :now
 ORDER BY due_time LIMIT 1
""",
    delete_timer="DELETE FROM workflow_timers WHERE workflow_id = ? AND timer_id = ?",
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
    release_task=f"""
UPDATE workflow_tasks
   SET status = CASE WHEN attempt <= 1 THEN 'SCHEDULED' ELSE 'BACKOFF' END,
       attempt = attempt - 1, lease_token = NULL, lease_expire_time = NULL,
       attempt_start_time = NULL, claimed_until = NULL, update_time = :now
 WHERE workflow_id = :workflow_id AND task_id = :task_id
   AND lease_token = :token AND status = 'LEASED'
RETURNING {TASK_COLUMNS}
""",
    claim_expired_tasks=f"""
UPDATE workflow_tasks SET claimed_until = :until
 WHERE (workflow_id, task_id) IN (
       SELECT workflow_id, task_id FROM workflow_tasks
        WHERE ((status = 'LEASED' AND lease_expire_time <= :now)
               OR (status IN {_OPEN} AND deadline <= :now))
          AND (claimed_until IS NULL OR claimed_until <= :now)
        LIMIT :limit)
RETURNING {TASK_COLUMNS}
""",
    get_task=f"SELECT {TASK_COLUMNS} FROM workflow_tasks WHERE workflow_id = ? AND task_id = ?",
    open_tasks=f"""
SELECT {TASK_COLUMNS} FROM workflow_tasks
 WHERE workflow_id IN (SELECT value FROM json_each(:ids)) AND status IN {_OPEN}
""",
    queue_stats=f"""
SELECT queue,
       coalesce(sum(status IN ('SCHEDULED', 'BACKOFF') AND available_time <= :now), 0),
       min(CASE WHEN status IN ('SCHEDULED', 'BACKOFF') AND available_time <= :now
                THEN available_time END),
       coalesce(sum(status = 'LEASED'), 0)
  FROM workflow_tasks WHERE status IN {_OPEN} GROUP BY queue ORDER BY queue
""",
    list_tasks=_list_tasks,
)


# Removing instances, one statement per table inside the purge's transaction (SQLite has
# one writer: nothing changes between them). :ids is a JSON array of workflow ids.
EXPIRED = f"""
SELECT workflow_id FROM workflow_instances
 WHERE expire_time <= :now AND status IN {_FINISHED}
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
INSTANCE_STANDING = "SELECT revision, status FROM workflow_instances WHERE workflow_id = ?"
