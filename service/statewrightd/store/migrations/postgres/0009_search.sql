-- Search fields: the values each save projects from an instance's context (its
-- definition's `search` block), one row per value (a keyword list has a row per
-- element), written in the save's own transaction. Text kinds in `text` (a text field in
-- lower case), the others in `number`. A filter on a search field reads one of the two
-- indexes, by field then value, and joins the instances by id.
CREATE TABLE workflow_search (
    workflow_id  text NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    field        text NOT NULL,
    text         text,
    number       double precision
);
CREATE INDEX workflow_search_text ON workflow_search (field, text, workflow_id);
CREATE INDEX workflow_search_number ON workflow_search (field, number, workflow_id);
-- A save that changes an instance's values replaces its rows: found by id.
CREATE INDEX workflow_search_instance ON workflow_search (workflow_id);
