-- Same shape as the PostgreSQL schema; times in integer microseconds since the epoch.
CREATE TABLE workflow_timers (
    workflow_id    TEXT NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    timer_id       TEXT NOT NULL,
    revision       INTEGER NOT NULL CHECK (revision >= 1),
    transition     INTEGER NOT NULL CHECK (transition >= 0),
    target         TEXT NOT NULL,
    after          TEXT NOT NULL,
    due_time       INTEGER NOT NULL,
    claimed_until  INTEGER,
    PRIMARY KEY (workflow_id, timer_id)
) WITHOUT ROWID;
CREATE INDEX workflow_timers_due ON workflow_timers (due_time);

ALTER TABLE workflow_history ADD COLUMN timers TEXT;
