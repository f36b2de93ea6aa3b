-- Instances: one row per workflow instance, updated in place by compare-and-swap on revision.
-- seq gives list() a stable keyset order that rows inserted later always sort after.
CREATE TABLE workflow_instances (
    workflow_id  text PRIMARY KEY,
    seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    definition   text NOT NULL,
    version      integer NOT NULL CHECK (version >= 1),
    state        text NOT NULL,
    status       text NOT NULL
                 CHECK (status IN ('RUNNING', 'WAITING', 'COMPLETED', 'FAILED', 'CANCELLED')),
    context      jsonb NOT NULL,
    revision     bigint NOT NULL CHECK (revision >= 1),
    error        jsonb,
    create_time  timestamptz NOT NULL,
    update_time  timestamptz NOT NULL
);
CREATE INDEX workflow_instances_definition_seq ON workflow_instances (definition, seq);
CREATE INDEX workflow_instances_status_seq ON workflow_instances (status, seq);

-- Exactly one row per revision; Watch replays these.
CREATE TABLE workflow_history (
    workflow_id  text NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    revision     bigint NOT NULL CHECK (revision >= 1),
    event        text,
    transitions  jsonb NOT NULL,
    state        text NOT NULL,
    status       text NOT NULL,
    context      jsonb NOT NULL,
    error        jsonb,
    time         timestamptz NOT NULL,
    PRIMARY KEY (workflow_id, revision)
);

-- Idempotency records; purged by age.
CREATE TABLE workflow_requests (
    request_id   text PRIMARY KEY,
    workflow_id  text NOT NULL,
    method       text NOT NULL,
    fingerprint  text NOT NULL,
    response     bytea NOT NULL,
    create_time  timestamptz NOT NULL
);
CREATE INDEX workflow_requests_create_time ON workflow_requests (create_time);

-- Definitions are immutable per (name, version).
CREATE TABLE workflow_definitions (
    name         text NOT NULL,
    version      integer NOT NULL CHECK (version >= 1),
    source       text NOT NULL,
    digest       text NOT NULL,
    source_name  text NOT NULL,
    create_time  timestamptz NOT NULL,
    PRIMARY KEY (name, version)
);
