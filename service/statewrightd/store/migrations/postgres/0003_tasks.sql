-- Tasks: one row per entry of a task state, written by the step that entered the state,
-- in its compare-and-swap transaction. Workers lease them (PollTasks); a lease is fenced
-- by its token: only the current lease may complete or fail the attempt.
CREATE TABLE workflow_tasks (
    workflow_id         text NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    task_id             text NOT NULL,   -- the revision of the step that scheduled it
    revision            bigint NOT NULL CHECK (revision >= 1),
    state               text NOT NULL,
    queue               text NOT NULL,
    input               jsonb NOT NULL,
    status              text NOT NULL CHECK (status IN
                            ('SCHEDULED', 'LEASED', 'BACKOFF', 'COMPLETED', 'FAILED',
                             'CANCELLED', 'TIMED_OUT')),
    attempt             integer NOT NULL DEFAULT 0,
    max_attempts        integer NOT NULL CHECK (max_attempts >= 1),
    lease_token         text,
    lease_expire_time   timestamptz,
    attempt_start_time  timestamptz,
    available_time      timestamptz NOT NULL,   -- when a worker may lease it (again)
    schedule_time       timestamptz NOT NULL,
    deadline            timestamptz NOT NULL,   -- schedule_to_close
    start_to_close_ms   bigint NOT NULL,
    heartbeat_ms        bigint,
    retry               jsonb NOT NULL,         -- initial, backoff, max (seconds), non_retryable
    heartbeat_details   jsonb,
    last_error          jsonb,
    last_request_id     text,                   -- the FailTask that retried the attempt
    claimed_until       timestamptz,            -- a replica handling its expiry holds it
    update_time         timestamptz NOT NULL,
    PRIMARY KEY (workflow_id, task_id)
);
-- What a poll needs: a queue's leasable tasks in the order they became available.
CREATE INDEX workflow_tasks_ready ON workflow_tasks (queue, available_time)
    WHERE status IN ('SCHEDULED', 'BACKOFF');
-- What the expiry sweep needs: leases and deadlines by time.
CREATE INDEX workflow_tasks_lease ON workflow_tasks (lease_expire_time) WHERE status = 'LEASED';
CREATE INDEX workflow_tasks_deadline ON workflow_tasks (deadline)
    WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF');
-- ListTasks by queue.
CREATE INDEX workflow_tasks_queue ON workflow_tasks (queue, schedule_time);
-- Diagnostics count the open tasks of every queue.
CREATE INDEX workflow_tasks_open ON workflow_tasks (queue)
    WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF');
