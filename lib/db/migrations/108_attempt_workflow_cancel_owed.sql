-- A cancel the task API committed whose workflow cancel Temporal has not yet taken: set in the cancel's transaction
-- (POST /api/attempts/:id/cancel, POST /api/tasks/:id/cancel), cleared once Temporal took the workflow's cancel or
-- had no such workflow. The start reconciler's pass delivers what is still set (lib/attempts/owedCancels.ts): after
-- an API that died between its commit and the cancel, or a Temporal that was down or did not answer. NULL otherwise.
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS workflow_cancel_owed_since timestamptz;
CREATE INDEX IF NOT EXISTS attempts_workflow_cancel_owed ON attempts (workflow_cancel_owed_since) WHERE workflow_cancel_owed_since IS NOT NULL;
