-- What each step took (a resume's input, a signal's payload, a task's result or failure,
-- the timer that fired, a cancellation's reason, a start's input), as JSON text, so
-- that history tells what moved the instance and not only where it went. Rows saved
-- before it are NULL.
ALTER TABLE workflow_history ADD COLUMN input TEXT;
