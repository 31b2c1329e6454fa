-- An assignment's delivery (service C, docs/multi-agent.md#lost-assignments). POST /tasks commits the row, then sends
-- the actor's `assign` signal; queued_at is set once Temporal took it. A row still `assigned` with no queued_at a
-- while after it was written lost its signal (the API replica died in between): the agents service's periodic check
-- sends it. delivery_claimed_until is a replica's claim on such a row while it sends it, so two replicas do not.
ALTER TABLE agent_tasks ADD COLUMN queued_at timestamptz;
ALTER TABLE agent_tasks ADD COLUMN delivery_claimed_until timestamptz;
CREATE INDEX agent_tasks_undelivered_idx ON agent_tasks (created_at, id) WHERE status = 'assigned' AND queued_at IS NULL;
