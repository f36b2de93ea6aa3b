-- An operator's pause of an instance (PauseWorkflow): {reason, actor, time}; NULL while
-- it is not paused. Written by the pause and unpause steps (and cleared by a cancel);
-- while it is set, the claims of timers and tasks pass over the instance's rows. On Citus
-- the coordinator's ALTER reaches every shard of the distributed table.
ALTER TABLE workflow_instances ADD COLUMN pause jsonb;
-- The claims ask whether an instance is paused by its key; few instances are paused at
-- once, so an index of those alone stays small.
CREATE INDEX workflow_instances_paused ON workflow_instances (workflow_id) WHERE pause IS NOT NULL;
