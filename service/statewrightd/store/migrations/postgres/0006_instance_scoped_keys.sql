-- Request records belong to their instance: a request id is unique per instance (as a
-- StartWorkflow request id already names one instance), not across the database. A
-- distributed database keeps them beside the instance, on its node, and a step records
-- its request id with no check on other nodes.
ALTER TABLE workflow_requests DROP CONSTRAINT workflow_requests_pkey;
ALTER TABLE workflow_requests ADD PRIMARY KEY (workflow_id, request_id);
DROP INDEX workflow_requests_workflow;

-- Lists page by creation time and id, not by a sequence: sequence values handed out on
-- different nodes of a distributed database do not follow the order of the inserts.
DROP INDEX workflow_instances_definition_seq;
DROP INDEX workflow_instances_status_seq;
ALTER TABLE workflow_instances DROP COLUMN seq;
CREATE INDEX workflow_instances_created ON workflow_instances (create_time, workflow_id);
CREATE INDEX workflow_instances_definition_created
    ON workflow_instances (definition, create_time, workflow_id);
CREATE INDEX workflow_instances_status_created
    ON workflow_instances (status, create_time, workflow_id);
