-- A finished instance's last history row kept no context of its own (readers took the
-- instance row's, unchanged once it finished). Repairs (RetryWorkflow, ResetWorkflow) step
-- finished instances again, so every history row now keeps its context: the rows written
-- before get theirs from the instance row, which still holds it.
UPDATE workflow_history h
   SET context = w.context
  FROM workflow_instances w
 WHERE h.workflow_id = w.workflow_id
   AND h.revision = w.revision
   AND h.context IS NULL;
