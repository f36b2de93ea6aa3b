-- Same shape as the PostgreSQL schema; JSON as text, times in integer microseconds.
CREATE TABLE workflow_tasks (
    workflow_id         TEXT NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    task_id             TEXT NOT NULL,
    revision            INTEGER NOT NULL CHECK (revision >= 1),
    state               TEXT NOT NULL,
    queue               TEXT NOT NULL,
    input               TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN
                            ('SCHEDULED', 'LEASED', 'BACKOFF', 'COMPLETED', 'FAILED',
                             'CANCELLED', 'TIMED_OUT')),
    attempt             INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER NOT NULL CHECK (max_attempts >= 1),
    lease_token         TEXT,
    lease_expire_time   INTEGER,
    attempt_start_time  INTEGER,
    available_time      INTEGER NOT NULL,
    schedule_time       INTEGER NOT NULL,
    deadline            INTEGER NOT NULL,
    start_to_close_ms   INTEGER NOT NULL,
    heartbeat_ms        INTEGER,
    retry               TEXT NOT NULL,
    heartbeat_details   TEXT,
    last_error          TEXT,
    last_request_id     TEXT,
    claimed_until       INTEGER,
    update_time         INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, task_id)
) WITHOUT ROWID;
CREATE INDEX workflow_tasks_ready ON workflow_tasks (queue, available_time)
    WHERE status IN ('SCHEDULED', 'BACKOFF');
CREATE INDEX workflow_tasks_lease ON workflow_tasks (lease_expire_time) WHERE status = 'LEASED';
CREATE INDEX workflow_tasks_deadline ON workflow_tasks (deadline)
    WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF');
CREATE INDEX workflow_tasks_queue ON workflow_tasks (queue, schedule_time);
CREATE INDEX workflow_tasks_open ON workflow_tasks (queue)
    WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF');
