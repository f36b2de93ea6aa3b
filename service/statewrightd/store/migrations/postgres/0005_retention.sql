-- Retention. A finished instance carries the time it may be removed (its finish time plus
-- the retention of its definition, or the server's), set by the step that finishes it;
-- live instances have none, so the purge can never reach them. The partial index holds
-- finished instances only, in the order the purge takes them.
ALTER TABLE workflow_instances ADD COLUMN expire_time timestamptz;
CREATE INDEX workflow_instances_expire ON workflow_instances (expire_time)
    WHERE expire_time IS NOT NULL;

-- Removing an instance removes its request records; deleting one (an erasure request)
-- must find them without scanning the table.
CREATE INDEX workflow_requests_workflow ON workflow_requests (workflow_id);

-- A history row of a finished instance's last revision stores no context: it is the
-- instance row's, which nothing changes any more (readers take it from there).
ALTER TABLE workflow_history ALTER COLUMN context DROP NOT NULL;

-- What the purge removed, kept for a while so that a read of a removed instance can say
-- that it expired rather than that it never existed. DeleteWorkflow leaves none.
CREATE TABLE workflow_tombstones (
    workflow_id   text PRIMARY KEY,
    expire_time   timestamptz NOT NULL,
    removed_time  timestamptz NOT NULL
);
CREATE INDEX workflow_tombstones_removed ON workflow_tombstones (removed_time);
