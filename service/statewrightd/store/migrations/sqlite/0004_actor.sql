-- The audit trail: who caused each step (a principal such as key:NAME or jwt:SUBJECT, or
-- statewright:timer for the server's own steps). Rows saved before it are NULL.
ALTER TABLE workflow_history ADD COLUMN actor text;
