-- Flow control on task queues (the PostgreSQL schema's shape; times in microseconds).
ALTER TABLE workflow_tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 3
    CHECK (priority BETWEEN 1 AND 5);
ALTER TABLE workflow_tasks ADD COLUMN concurrency_key TEXT;
CREATE INDEX workflow_tasks_ranked ON workflow_tasks (queue, priority, available_time)
    WHERE status IN ('SCHEDULED', 'BACKOFF');
CREATE INDEX workflow_tasks_leased ON workflow_tasks (queue, concurrency_key)
    WHERE status = 'LEASED';
CREATE TABLE task_queues (
    queue           TEXT PRIMARY KEY,
    max_leased      INTEGER CHECK (max_leased >= 0),
    rate            REAL CHECK (rate >= 0),
    burst           INTEGER CHECK (burst >= 0),
    key_max_leased  INTEGER CHECK (key_max_leased >= 0),
    key_rate        REAL CHECK (key_rate >= 0),
    key_burst       INTEGER CHECK (key_burst >= 0),
    tokens          REAL NOT NULL DEFAULT 0,
    refill_time     INTEGER,
    update_time     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE task_queue_keys (
    queue           TEXT NOT NULL,
    key             TEXT NOT NULL,
    tokens          REAL,
    refill_time     INTEGER,
    last_lease_time INTEGER,
    closed_until    INTEGER,
    PRIMARY KEY (queue, key)
) WITHOUT ROWID;
