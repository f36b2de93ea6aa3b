-- Whether a child's end no longer waits for its parent (see the PostgreSQL migration).
ALTER TABLE workflow_children ADD COLUMN taken INTEGER NOT NULL DEFAULT 0;
CREATE INDEX workflow_children_untaken ON workflow_children (workflow_id) WHERE NOT taken;
