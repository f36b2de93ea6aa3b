-- Fan-out (the PostgreSQL schema's shape): an item's index, and its result until the join.
ALTER TABLE workflow_tasks ADD COLUMN item_index INTEGER CHECK (item_index >= 0);
ALTER TABLE workflow_tasks ADD COLUMN result TEXT;
