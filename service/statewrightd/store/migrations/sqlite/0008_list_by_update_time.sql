-- Lists may be read by last change (ListWorkflows order_by update_time, either way): an
-- index on (update_time, workflow_id) serves both directions, read forwards or backwards,
-- as workflow_instances_created does for the create time orders.
CREATE INDEX workflow_instances_updated ON workflow_instances (update_time, workflow_id);
