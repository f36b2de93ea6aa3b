-- Child workflows: each child's parent (the instance, the task on the children's queue
-- that stands for the child in it, and that task's state). The child runner writes the
-- link before it starts the child (so it has no foreign key: the child may not exist
-- yet); an id another instance already holds without a link is never taken for a child.
-- Keyed by the child's id: on Citus it is distributed with, and colocated to, the
-- instances, so `parent = ...` filters and the live-children scan join within a shard.
CREATE TABLE workflow_children (
    workflow_id   text PRIMARY KEY,
    parent_id     text NOT NULL,
    parent_task   text NOT NULL,
    parent_state  text NOT NULL,
    create_time   timestamptz NOT NULL
);
CREATE INDEX workflow_children_parent ON workflow_children (parent_id, workflow_id);
