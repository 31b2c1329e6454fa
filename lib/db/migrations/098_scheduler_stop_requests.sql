-- Stops asked for through the API (service B): POST /executions/{id}/stop, and the deletion of a workflow (or of the
-- source its flow tasks use) for each run it stops, add the execution's id once Temporal took the cancel. The running
-- task's try reads it every second and stops its script or flow request at once, instead of when Temporal's
-- cancellation reaches it with a heartbeat (up to 24 s with the 30 s heartbeat timeout: docs/scheduler.md#stop).
-- No foreign key: a deletion's stop outlives the execution rows it removed. Pruned by age with the executions.
CREATE TABLE scheduler_stop_requests (
  execution_id  uuid PRIMARY KEY,
  requested_at  timestamptz NOT NULL DEFAULT now()
);
