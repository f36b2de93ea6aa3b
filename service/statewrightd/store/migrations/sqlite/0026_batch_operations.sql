-- Batch operations (BatchService): one row a batch, with the document it was started
-- with (read and written whole by the app; the store reads none of it), its state, its
-- counts (kept by the store as items end, in the same transaction) and the lease of the
-- replica working through it. version is bumped by every write but the lease's.
CREATE TABLE batch_operations (
    batch_id     TEXT PRIMARY KEY,
    document     TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('RUNNING', 'COMPLETED', 'CANCELLED')),
    matched      INTEGER NOT NULL CHECK (matched >= 0),
    done         INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    version      INTEGER NOT NULL CHECK (version >= 1),
    lease_owner  TEXT,
    lease_until  INTEGER,
    create_time  INTEGER NOT NULL,
    update_time  INTEGER NOT NULL,
    end_time     INTEGER
) WITHOUT ROWID;
-- The claim (the oldest RUNNING batch) and a listing of one state, newest first.
CREATE INDEX batch_operations_state ON batch_operations (state, create_time, batch_id);
-- The listing of every batch, newest first.
CREATE INDEX batch_operations_created ON batch_operations (create_time, batch_id);
-- The instances a batch matched when it started, one row each, worked through in workflow
-- id order; an item ends once (done, or failed with its error).
CREATE TABLE batch_items (
    batch_id     TEXT NOT NULL,
    workflow_id  TEXT NOT NULL,
    ended        INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    code         TEXT,
    reason       TEXT,
    message      TEXT,
    end_time     INTEGER,
    PRIMARY KEY (batch_id, workflow_id)
) WITHOUT ROWID;
-- The next page of a batch's pending items, without stepping over those that ended.
CREATE INDEX batch_items_pending ON batch_items (batch_id, workflow_id) WHERE NOT ended;
-- A batch's failures, paged (few, as a rule).
CREATE INDEX batch_items_failed ON batch_items (batch_id, workflow_id) WHERE failed;
