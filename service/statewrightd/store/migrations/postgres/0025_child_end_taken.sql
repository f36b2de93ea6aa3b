-- Whether a child's end no longer waits for its parent: set once the parent's task for
-- the child is closed (its end delivered, or the parent left the state or is gone).
-- Retention keeps a finished child until then, so that a child's retention shorter than
-- its delivery cannot take its result from its parent.
ALTER TABLE workflow_children ADD COLUMN taken boolean NOT NULL DEFAULT false;
CREATE INDEX workflow_children_untaken ON workflow_children (workflow_id) WHERE NOT taken;
