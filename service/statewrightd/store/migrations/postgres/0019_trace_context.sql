-- Trace context of the step that scheduled a task: the W3C traceparent
-- and tracestate (NULL when tracing was off). A worker's span joins the trace through the
-- task's.
ALTER TABLE workflow_tasks ADD COLUMN trace_parent text;
ALTER TABLE workflow_tasks ADD COLUMN trace_state text;
