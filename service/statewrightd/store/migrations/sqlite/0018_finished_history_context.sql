-- Every history row keeps its context (the PostgreSQL migration says why): a finished
-- instance's last row, written without one, gets it from the instance row.
UPDATE workflow_history
   SET context = (SELECT w.context FROM workflow_instances w
                   WHERE w.workflow_id = workflow_history.workflow_id)
 WHERE context IS NULL
   AND revision = (SELECT w.revision FROM workflow_instances w
                    WHERE w.workflow_id = workflow_history.workflow_id);
