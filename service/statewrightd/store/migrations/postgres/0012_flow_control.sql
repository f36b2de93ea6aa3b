-- Flow control on task queues. Each task carries its priority (1 is served first) and
-- its concurrency key, evaluated when its state scheduled it.
ALTER TABLE workflow_tasks ADD COLUMN priority integer NOT NULL DEFAULT 3
    CHECK (priority BETWEEN 1 AND 5);
ALTER TABLE workflow_tasks ADD COLUMN concurrency_key text;
-- A limited queue's poll reads the oldest ready tasks of each priority, and counts the
-- leased ones by key: both stay index ranges however long the backlog.
CREATE INDEX workflow_tasks_ranked ON workflow_tasks (queue, priority, available_time)
    WHERE status IN ('SCHEDULED', 'BACKOFF');
CREATE INDEX workflow_tasks_leased ON workflow_tasks (queue, concurrency_key)
    WHERE status = 'LEASED';
-- A queue's limits, shared by every replica: a poll of a queue with a row here locks it
-- (the queue's token bucket lives in it) for the length of its claim.
CREATE TABLE task_queues (
    queue           text PRIMARY KEY,
    max_leased      integer CHECK (max_leased >= 0),        -- NULL or 0: no limit
    rate            double precision CHECK (rate >= 0),     -- tasks a second; NULL or 0: none
    burst           integer CHECK (burst >= 0),
    key_max_leased  integer CHECK (key_max_leased >= 0),
    key_rate        double precision CHECK (key_rate >= 0),
    key_burst       integer CHECK (key_burst >= 0),
    tokens          double precision NOT NULL DEFAULT 0,
    refill_time     timestamptz,
    update_time     timestamptz NOT NULL
);
-- What a queue knows of each key it has served: its token bucket, when it was last served
-- (round robin), and until when a worker closed it.
CREATE TABLE task_queue_keys (
    queue           text NOT NULL,
    key             text NOT NULL,
    tokens          double precision,
    refill_time     timestamptz,
    last_lease_time timestamptz,
    closed_until    timestamptz,
    PRIMARY KEY (queue, key)
);
