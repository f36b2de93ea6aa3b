-- Trace context of the step that scheduled a task (the PostgreSQL
-- schema's shape): the W3C traceparent and tracestate, NULL when tracing was off.
ALTER TABLE workflow_tasks ADD COLUMN trace_parent TEXT;
ALTER TABLE workflow_tasks ADD COLUMN trace_state TEXT;
