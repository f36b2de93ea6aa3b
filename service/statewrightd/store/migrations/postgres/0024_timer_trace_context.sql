-- Trace context of the step that armed a timer: the W3C traceparent and tracestate (NULL
-- when tracing was off). The step the timer fires is linked to that step's span. On
-- Citus the distributed table takes the columns as they are added here.
ALTER TABLE workflow_timers ADD COLUMN trace_parent text;
ALTER TABLE workflow_timers ADD COLUMN trace_state text;
