-- A workflow's immutable identity (service B). A name is reused once its workflow is deleted, so an execution belongs
-- to its workflow by id: a run of a deleted workflow cannot write a row under a workflow re-created with its name,
-- whatever the order of the deletion, the re-creation and the run's writes (the foreign key finds the old id gone).
ALTER TABLE scheduler_workflows ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE scheduler_workflows ADD CONSTRAINT scheduler_workflows_id_key UNIQUE (id);
-- the key the executions' foreign key names: an execution's name is its workflow's (names never change)
ALTER TABLE scheduler_workflows ADD CONSTRAINT scheduler_workflows_id_name_key UNIQUE (id, name);

ALTER TABLE scheduler_executions ADD COLUMN workflow_id uuid;
UPDATE scheduler_executions e SET workflow_id = w.id FROM scheduler_workflows w WHERE w.name = e.workflow;
ALTER TABLE scheduler_executions ALTER COLUMN workflow_id SET NOT NULL;
-- replaces the foreign key on the name alone, which a re-created workflow satisfied
ALTER TABLE scheduler_executions DROP CONSTRAINT scheduler_executions_workflow_fkey;
ALTER TABLE scheduler_executions ADD CONSTRAINT scheduler_executions_workflow_id_fkey
  FOREIGN KEY (workflow_id, workflow) REFERENCES scheduler_workflows (id, name) ON DELETE CASCADE;
