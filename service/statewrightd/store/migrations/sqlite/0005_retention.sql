-- Same shape as the PostgreSQL schema; times in integer microseconds since the epoch.
ALTER TABLE workflow_instances ADD COLUMN expire_time INTEGER;
CREATE INDEX workflow_instances_expire ON workflow_instances (expire_time)
    WHERE expire_time IS NOT NULL;

CREATE INDEX workflow_requests_workflow ON workflow_requests (workflow_id);

CREATE TABLE workflow_tombstones (
    workflow_id   TEXT PRIMARY KEY,
    expire_time   INTEGER NOT NULL,
    removed_time  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX workflow_tombstones_removed ON workflow_tombstones (removed_time);

-- A history row of a finished instance's last revision stores no context (see the
-- PostgreSQL migration). SQLite cannot drop a NOT NULL constraint in place: the table is
-- rebuilt with the same rows.
CREATE TABLE workflow_history_new (
    workflow_id  TEXT NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    revision     INTEGER NOT NULL CHECK (revision >= 1),
    event        TEXT,
    transitions  TEXT NOT NULL,
    state        TEXT NOT NULL,
    status       TEXT NOT NULL,
    context      TEXT,
    error        TEXT,
    time         INTEGER NOT NULL,
    timers       TEXT,
    actor        TEXT,
    PRIMARY KEY (workflow_id, revision)
) WITHOUT ROWID;
INSERT INTO workflow_history_new
    (workflow_id, revision, event, transitions, state, status, context, error, time, timers,
     actor)
SELECT workflow_id, revision, event, transitions, state, status, context, error, time, timers,
       actor
  FROM workflow_history;
DROP TABLE workflow_history;
ALTER TABLE workflow_history_new RENAME TO workflow_history;
