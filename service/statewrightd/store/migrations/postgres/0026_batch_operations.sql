-- Batch operations (BatchService): one row a batch, with the document it was started
-- with (read and written whole by the app; the store reads none of it), its state, its
-- counts (kept by the store as items end, in the same transaction) and the lease of the
-- replica working through it. version is bumped by every write but the lease's. Not per
-- instance: on Citus it is a reference table, so that the claim's FOR UPDATE SKIP LOCKED
-- stays within one shard.
CREATE TABLE batch_operations (
    batch_id     text PRIMARY KEY,
    document     jsonb NOT NULL,
    state        text NOT NULL CHECK (state IN ('RUNNING', 'COMPLETED', 'CANCELLED')),
    matched      bigint NOT NULL CHECK (matched >= 0),
    done         bigint NOT NULL DEFAULT 0,
    failed       bigint NOT NULL DEFAULT 0,
    version      bigint NOT NULL CHECK (version >= 1),
    lease_owner  text,
    lease_until  timestamptz,
    create_time  timestamptz NOT NULL,
    update_time  timestamptz NOT NULL,
    end_time     timestamptz
);
-- The claim (the oldest RUNNING batch) and a listing of one state, newest first.
CREATE INDEX batch_operations_state ON batch_operations (state, create_time, batch_id);
-- The listing of every batch, newest first.
CREATE INDEX batch_operations_created ON batch_operations (create_time, batch_id);
-- The instances a batch matched when it started, one row each, worked through in workflow
-- id order; an item ends once (done, or failed with its error). On Citus distributed by
-- batch_id: all of a batch's items live on one shard.
CREATE TABLE batch_items (
    batch_id     text NOT NULL,
    workflow_id  text NOT NULL,
    ended        boolean NOT NULL DEFAULT false,
    failed       boolean NOT NULL DEFAULT false,
    code         text,
    reason       text,
    message      text,
    end_time     timestamptz,
    PRIMARY KEY (batch_id, workflow_id)
);
-- The next page of a batch's pending items, without stepping over those that ended.
CREATE INDEX batch_items_pending ON batch_items (batch_id, workflow_id) WHERE NOT ended;
-- A batch's failures, paged (few, as a rule).
CREATE INDEX batch_items_failed ON batch_items (batch_id, workflow_id) WHERE failed;
