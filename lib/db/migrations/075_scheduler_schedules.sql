-- Several schedules per workflow (service B). Each row is one Temporal Schedule (`temporal_id`): cron schedules and
-- one-time schedules (`now` or a date-time), each with its own zone and input. Every workflow has exactly one default
-- schedule row (`is_default`): the schedule of the workflow's own `schedule`/`timezone`/`jitter`/`enabled` fields and of
-- the spec's /schedules/{workflow} routes, kept at its old Temporal id `schedule:<workflow>`. Its cron is NULL while the
-- workflow has no schedule (no Temporal Schedule then), so a zone or `enabled: false` given at creation is kept.
CREATE TABLE scheduler_schedules (
  id           uuid PRIMARY KEY,
  workflow     text NOT NULL REFERENCES scheduler_workflows (name) ON DELETE CASCADE,
  temporal_id  text NOT NULL UNIQUE,
  is_default   boolean NOT NULL DEFAULT false,
  type         text NOT NULL CHECK (type IN ('cron', 'one-time')),
  cron         text,
  -- one-time: the time as written ('now' or the date-time) and the instant it stands for
  at           text,
  run_at       timestamptz,
  timezone     text NOT NULL DEFAULT 'UTC',
  jitter_ms    integer NOT NULL DEFAULT 0,
  enabled      boolean NOT NULL DEFAULT true,
  -- handed to the runs this schedule starts (flow tasks' input, scripts' ARMADA_INPUT); NULL = none
  input        jsonb,
  -- one-time: when its run started (written by the run's first recordExecution)
  ran_at       timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CHECK ((type = 'cron' AND at IS NULL AND run_at IS NULL)
      OR (type = 'one-time' AND NOT is_default AND cron IS NULL AND at IS NOT NULL AND run_at IS NOT NULL))
);
CREATE UNIQUE INDEX scheduler_schedules_default_key ON scheduler_schedules (workflow) WHERE is_default;
CREATE INDEX scheduler_schedules_workflow_idx ON scheduler_schedules (workflow, created_at, id);

INSERT INTO scheduler_schedules (id, workflow, temporal_id, is_default, type, cron, timezone, jitter_ms, enabled, created_at, updated_at)
SELECT gen_random_uuid(), name, 'schedule:' || name, true, 'cron', schedule, timezone, jitter_ms, enabled, created_at, updated_at
  FROM scheduler_workflows;

ALTER TABLE scheduler_workflows DROP COLUMN schedule, DROP COLUMN timezone, DROP COLUMN jitter_ms, DROP COLUMN enabled;

-- Which schedule started an execution, the input it ran with, and the execution it re-runs.
ALTER TABLE scheduler_executions
  ADD COLUMN schedule_id uuid REFERENCES scheduler_schedules (id) ON DELETE SET NULL,
  ADD COLUMN input jsonb,
  ADD COLUMN retry_of uuid REFERENCES scheduler_executions (id) ON DELETE SET NULL;
CREATE INDEX scheduler_executions_schedule_idx ON scheduler_executions (schedule_id, started_at DESC) WHERE schedule_id IS NOT NULL;
CREATE INDEX scheduler_executions_retry_of_idx ON scheduler_executions (retry_of) WHERE retry_of IS NOT NULL;
