-- Trace context of the step that armed a timer (the PostgreSQL schema's shape): the W3C
-- traceparent and tracestate, NULL when tracing was off. The step the timer fires is
-- linked to that step's span.
ALTER TABLE workflow_timers ADD COLUMN trace_parent TEXT;
ALTER TABLE workflow_timers ADD COLUMN trace_state TEXT;
