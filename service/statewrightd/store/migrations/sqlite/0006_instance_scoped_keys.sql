-- Request ids are unique per instance, and lists page by creation time and id (see the
-- PostgreSQL migration). SQLite cannot change a primary key in place: the request table
-- is rebuilt with the same rows. seq stays (it is the table's rowid) but orders nothing.
CREATE TABLE workflow_requests_new (
    request_id   TEXT NOT NULL,
    workflow_id  TEXT NOT NULL,
    method       TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    response     BLOB NOT NULL,
    create_time  INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, request_id)
) WITHOUT ROWID;
INSERT INTO workflow_requests_new (request_id, workflow_id, method, fingerprint, response,
                                   create_time)
SELECT request_id, workflow_id, method, fingerprint, response, create_time
  FROM workflow_requests;
DROP TABLE workflow_requests;
ALTER TABLE workflow_requests_new RENAME TO workflow_requests;
CREATE INDEX workflow_requests_create_time ON workflow_requests (create_time);

DROP INDEX workflow_instances_definition_seq;
DROP INDEX workflow_instances_status_seq;
CREATE INDEX workflow_instances_created ON workflow_instances (create_time, workflow_id);
CREATE INDEX workflow_instances_definition_created
    ON workflow_instances (definition, create_time, workflow_id);
CREATE INDEX workflow_instances_status_created
    ON workflow_instances (status, create_time, workflow_id);
