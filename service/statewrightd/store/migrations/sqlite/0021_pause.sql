-- An operator's pause (the PostgreSQL schema's shape): JSON text, NULL while not paused.
ALTER TABLE workflow_instances ADD COLUMN pause TEXT;
CREATE INDEX workflow_instances_paused ON workflow_instances (workflow_id) WHERE pause IS NOT NULL;
