-- Child workflows (the PostgreSQL schema's shape): each child's parent, written by the
-- child runner before it starts the child.
CREATE TABLE workflow_children (
    workflow_id   TEXT PRIMARY KEY,
    parent_id     TEXT NOT NULL,
    parent_task   TEXT NOT NULL,
    parent_state  TEXT NOT NULL,
    create_time   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX workflow_children_parent ON workflow_children (parent_id, workflow_id);
