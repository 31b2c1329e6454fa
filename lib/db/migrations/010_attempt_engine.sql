-- The attempt engine: what attemptWorkflow projects into PostgreSQL besides the attempts row of 001.

ALTER TABLE attempts
  ADD COLUMN base_commit     text,
  -- the worker-specific task queue of the host that holds the worktree (git activities are routed there)
  ADD COLUMN host_queue      text,
  ADD COLUMN error           text,
  ADD COLUMN merged_at       timestamptz,
  ADD COLUMN merge_commit    text,
  ADD COLUMN cleaned_up      boolean NOT NULL DEFAULT false,
  ADD COLUMN output_changes  text[] NOT NULL DEFAULT '{}',
  ADD COLUMN updated_at      timestamptz NOT NULL DEFAULT now();
CREATE INDEX attempts_created_idx ON attempts (created_at DESC, id DESC);
CREATE INDEX attempts_llm_idx ON attempts (llm);

-- One agent run (the initial prompt or a follow-up) of an attempt.
CREATE TABLE processes (
  id              text PRIMARY KEY,
  attempt_id      text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  task_id         text NOT NULL,
  llm             text NOT NULL,
  model           text,
  kind            text NOT NULL DEFAULT 'initial' CHECK (kind IN ('initial', 'follow_up')),
  prompt          text NOT NULL DEFAULT '',
  status          text NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'stopped')),
  pid             integer,
  exit_code       integer,
  error           text,
  resources       jsonb NOT NULL DEFAULT '{"cpuUsage":0,"memoryUsage":0,"diskIO":0,"networkIO":0}'::jsonb,
  progress        jsonb NOT NULL DEFAULT '{"stage":"queued","current":"","percentage":0,"estimatedRemaining":0}'::jsonb,
  input_tokens    bigint NOT NULL DEFAULT 0,
  output_tokens   bigint NOT NULL DEFAULT 0,
  estimated_cost  double precision NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz,
  cancelled_at    timestamptz,
  stopped_at      timestamptz
);
CREATE INDEX processes_attempt_idx ON processes (attempt_id, created_at);
CREATE INDEX processes_status_idx ON processes (status, created_at DESC);

-- Log entries: append-only rows numbered per process, so since/tail/resume are index range reads.
CREATE TABLE process_logs (
  process_id  text NOT NULL REFERENCES processes (id) ON DELETE CASCADE,
  seq         integer NOT NULL,
  attempt_id  text NOT NULL,
  level       text NOT NULL CHECK (level IN ('debug', 'info', 'warn', 'error')),
  message     text NOT NULL,
  source      text NOT NULL DEFAULT 'stdout',
  raw         text NOT NULL DEFAULT '',
  metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
  ts          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (process_id, seq)
);
CREATE INDEX process_logs_attempt_idx ON process_logs (attempt_id, ts);

-- Resource samples of a process group (bounded per process by the sampler).
CREATE TABLE process_metric_samples (
  process_id  text NOT NULL REFERENCES processes (id) ON DELETE CASCADE,
  ts          timestamptz NOT NULL,
  cpu         double precision NOT NULL,
  memory      double precision NOT NULL,
  disk_io     double precision NOT NULL,
  network_io  double precision NOT NULL,
  PRIMARY KEY (process_id, ts)
);

-- Idempotency-Key of POST …/start: the first request with a key names the attempt every retry returns.
CREATE TABLE attempt_idempotency_keys (
  scope       text NOT NULL,
  key         text NOT NULL,
  attempt_id  text NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);
