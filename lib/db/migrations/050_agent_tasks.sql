-- Multi-agent service (C): tasks assigned to configured agents. The agent's actor workflow (agent:<name>) owns the
-- queue and the order; this table is the projection its activities write (idempotently) for lists and filters.
CREATE TABLE agent_tasks (
  id            text PRIMARY KEY,
  agent         text NOT NULL,
  task          text NOT NULL,
  priority      text NOT NULL CHECK (priority IN ('high', 'normal', 'low')),
  status        text NOT NULL DEFAULT 'assigned' CHECK (status IN ('assigned', 'running', 'completed', 'failed')),
  result        text,
  error         text,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  started_at    timestamptz,
  completed_at  timestamptz,
  updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX agent_tasks_agent_created_idx ON agent_tasks (agent, created_at DESC, id DESC);
CREATE INDEX agent_tasks_status_created_idx ON agent_tasks (status, created_at DESC, id DESC);
CREATE INDEX agent_tasks_created_idx ON agent_tasks (created_at DESC, id DESC);
