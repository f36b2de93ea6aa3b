-- Same shape as the PostgreSQL schema. JSON is stored as text and timestamps as integer
-- microseconds since the epoch (exact and correctly ordered). The implicit rowid orders
-- list() the way seq does on PostgreSQL; AUTOINCREMENT keeps it from ever being reused.
CREATE TABLE workflow_instances (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id  TEXT NOT NULL UNIQUE,
    definition   TEXT NOT NULL,
    version      INTEGER NOT NULL CHECK (version >= 1),
    state        TEXT NOT NULL,
    status       TEXT NOT NULL
                 CHECK (status IN ('RUNNING', 'WAITING', 'COMPLETED', 'FAILED', 'CANCELLED')),
    context      TEXT NOT NULL,
    revision     INTEGER NOT NULL CHECK (revision >= 1),
    error        TEXT,
    create_time  INTEGER NOT NULL,
    update_time  INTEGER NOT NULL
);
CREATE INDEX workflow_instances_definition_seq ON workflow_instances (definition, seq);
CREATE INDEX workflow_instances_status_seq ON workflow_instances (status, seq);

CREATE TABLE workflow_history (
    workflow_id  TEXT NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    revision     INTEGER NOT NULL CHECK (revision >= 1),
    event        TEXT,
    transitions  TEXT NOT NULL,
    state        TEXT NOT NULL,
    status       TEXT NOT NULL,
    context      TEXT NOT NULL,
    error        TEXT,
    time         INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, revision)
) WITHOUT ROWID;

CREATE TABLE workflow_requests (
    request_id   TEXT PRIMARY KEY,
    workflow_id  TEXT NOT NULL,
    method       TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    response     BLOB NOT NULL,
    create_time  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX workflow_requests_create_time ON workflow_requests (create_time);

CREATE TABLE workflow_definitions (
    name         TEXT NOT NULL,
    version      INTEGER NOT NULL CHECK (version >= 1),
    source       TEXT NOT NULL,
    digest       TEXT NOT NULL,
    source_name  TEXT NOT NULL,
    create_time  INTEGER NOT NULL,
    PRIMARY KEY (name, version)
) WITHOUT ROWID;
