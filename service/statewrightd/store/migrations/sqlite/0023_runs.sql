-- Runs (the PostgreSQL schema's shape): the run an instance is in, and the run each
-- history row's step belonged to; rows from before it belong to the first run.
ALTER TABLE workflow_instances ADD COLUMN run INTEGER NOT NULL DEFAULT 1 CHECK (run >= 1);
ALTER TABLE workflow_history ADD COLUMN run INTEGER NOT NULL DEFAULT 1 CHECK (run >= 1);
