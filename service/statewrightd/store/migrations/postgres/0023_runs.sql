-- Runs: a finished instance started again (StartWorkflow with if_exists RESTART) begins a
-- new run under the same id, from the entry point, at the next revision. The instance
-- row holds the run it is in, and each history row the run its step belonged to, so that
-- the earlier runs' history stays readable and tells apart from the new one's. Rows from
-- before it belong to the first run.
ALTER TABLE workflow_instances ADD COLUMN run integer NOT NULL DEFAULT 1 CHECK (run >= 1);
ALTER TABLE workflow_history ADD COLUMN run integer NOT NULL DEFAULT 1 CHECK (run >= 1);
