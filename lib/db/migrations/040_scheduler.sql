-- Workflow scheduler (service B): sources, workflows, executions (projections of workflowRunWorkflow) and their logs.
-- Schedules themselves live in Temporal (`schedule:<workflow>`); the cron string and zone are kept here as written.

CREATE TABLE scheduler_sources (
  id                uuid PRIMARY KEY,
  name              text NOT NULL,
  source_type       text NOT NULL CHECK (source_type IN ('flow-builder', 'langflow', 'automagik-hive', 'automagik-agents')),
  url               text NOT NULL,
  api_key_sealed    text,
  status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
  -- who set `status` last: the user (PATCH) or the periodic health check, which only undoes its own changes
  status_reason     text NOT NULL DEFAULT 'user' CHECK (status_reason IN ('user', 'health')),
  version_info      jsonb,
  last_health_at    timestamptz,
  last_health_ok    boolean,
  last_health_error text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scheduler_sources_url_key ON scheduler_sources (url);
CREATE INDEX scheduler_sources_created_idx ON scheduler_sources (created_at DESC, id DESC);

CREATE TABLE scheduler_workflows (
  name          text PRIMARY KEY,
  description   text NOT NULL DEFAULT '',
  schedule      text,
  timezone      text NOT NULL DEFAULT 'UTC',
  jitter_ms     integer NOT NULL DEFAULT 0,
  enabled       boolean NOT NULL DEFAULT true,
  tasks         jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Sources a workflow's flow tasks use: deleting a source removes these workflows (same transaction).
CREATE TABLE scheduler_workflow_sources (
  workflow   text NOT NULL REFERENCES scheduler_workflows (name) ON DELETE CASCADE,
  source_id  uuid NOT NULL REFERENCES scheduler_sources (id) ON DELETE CASCADE,
  PRIMARY KEY (workflow, source_id)
);
CREATE INDEX scheduler_workflow_sources_source_idx ON scheduler_workflow_sources (source_id);

CREATE TABLE scheduler_executions (
  id                   uuid PRIMARY KEY,
  workflow             text NOT NULL REFERENCES scheduler_workflows (name) ON DELETE CASCADE,
  temporal_workflow_id text NOT NULL,
  trigger              text NOT NULL CHECK (trigger IN ('manual', 'schedule')),
  status               text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'stopped')),
  scheduled_at         timestamptz,
  started_at           timestamptz NOT NULL,
  completed_at         timestamptz,
  tasks                jsonb NOT NULL DEFAULT '[]'::jsonb,
  error                text
);
CREATE INDEX scheduler_executions_started_idx ON scheduler_executions (started_at DESC, id DESC);
CREATE INDEX scheduler_executions_workflow_idx ON scheduler_executions (workflow, started_at DESC, id DESC);
CREATE INDEX scheduler_executions_completed_idx ON scheduler_executions (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE scheduler_execution_logs (
  id            bigserial PRIMARY KEY,
  execution_id  uuid NOT NULL REFERENCES scheduler_executions (id) ON DELETE CASCADE,
  -- idempotency key: an activity retried by Temporal writes the same lines again without duplicating them
  key           text NOT NULL,
  ts            timestamptz NOT NULL,
  level         text NOT NULL CHECK (level IN ('debug', 'info', 'warning', 'error')),
  message       text NOT NULL
);
CREATE UNIQUE INDEX scheduler_execution_logs_key ON scheduler_execution_logs (execution_id, key);
CREATE INDEX scheduler_execution_logs_exec_idx ON scheduler_execution_logs (execution_id, id);
