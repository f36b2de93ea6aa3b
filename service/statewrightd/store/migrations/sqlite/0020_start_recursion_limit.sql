-- A start's own recursion limit (the PostgreSQL schema's shape): NULL, the definition's.
ALTER TABLE workflow_instances ADD COLUMN recursion_limit INTEGER;
