-- The running executions in the order of their start (service B): what the scheduler API's execution reconciler
-- (api/scheduler/executionReconciler.ts) walks every few seconds, looking for runs Temporal does not have
-- (docs/scheduler.md#executions-without-a-run). Partial, so it holds only the few running rows and the walk never
-- reads the finished ones the table keeps for the retention period.
CREATE INDEX scheduler_executions_running_idx ON scheduler_executions (started_at, id) WHERE status = 'running';
