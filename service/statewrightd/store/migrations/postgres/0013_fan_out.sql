-- Fan-out (`map` on a task state): one task per item, written by the step that enters the
-- state. An item's index in its list, and its result once it completed: kept on the task
-- (not in the context) until the join reads every item's end in list order.
ALTER TABLE workflow_tasks ADD COLUMN item_index integer CHECK (item_index >= 0);
ALTER TABLE workflow_tasks ADD COLUMN result jsonb;
