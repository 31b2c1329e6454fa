-- Projects and tasks: the first slice of the task service.

CREATE TABLE projects (
  id              text PRIMARY KEY,
  name            text NOT NULL,
  description     text NOT NULL DEFAULT '',
  repo_url        text NOT NULL,
  repo_branch     text NOT NULL DEFAULT 'main',
  git_repo_path   text,
  clone_status    text NOT NULL DEFAULT 'ready' CHECK (clone_status IN ('ready', 'cloning', 'failed')),
  clone_error     text,
  setup_script    text NOT NULL DEFAULT '',
  dev_script      text NOT NULL DEFAULT '',
  default_llm     text,
  config          jsonb NOT NULL DEFAULT '{}'::jsonb,
  last_sync       timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX projects_name_key ON projects (lower(name));
CREATE INDEX projects_created_idx ON projects (created_at DESC, id DESC);

CREATE TABLE tasks (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  title         text NOT NULL,
  description   text NOT NULL DEFAULT '',
  status        text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'in_progress', 'review', 'completed', 'failed', 'cancelled')),
  priority      text NOT NULL DEFAULT 'medium' CHECK (priority IN ('low', 'medium', 'high', 'critical')),
  priority_rank smallint GENERATED ALWAYS AS (
                  CASE priority WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3 ELSE 4 END) STORED,
  labels        text[] NOT NULL DEFAULT '{}',
  assignee      text,
  created_by    text NOT NULL DEFAULT '',
  metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  completed_at  timestamptz
);
CREATE INDEX tasks_created_idx ON tasks (created_at DESC, id DESC);
CREATE INDEX tasks_project_created_idx ON tasks (project_id, created_at DESC, id DESC);
CREATE INDEX tasks_status_created_idx ON tasks (status, created_at DESC, id DESC);
CREATE INDEX tasks_priority_idx ON tasks (priority_rank, created_at DESC, id DESC);
CREATE INDEX tasks_labels_idx ON tasks USING gin (labels);
CREATE INDEX tasks_assignee_idx ON tasks (assignee);

-- Row counts per (project, status), kept by a trigger, so paginated lists never count the whole table.
CREATE TABLE task_counts (
  project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  status     text NOT NULL,
  n          bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, status)
);

CREATE FUNCTION task_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE task_counts SET n = n - 1 WHERE project_id = OLD.project_id AND status = OLD.status;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO task_counts (project_id, status, n) VALUES (NEW.project_id, NEW.status, 1)
    ON CONFLICT (project_id, status) DO UPDATE SET n = task_counts.n + 1;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER tasks_count_ins AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION task_counts_apply();
CREATE TRIGGER tasks_count_del AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION task_counts_apply();
CREATE TRIGGER tasks_count_upd AFTER UPDATE OF status, project_id ON tasks
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.project_id IS DISTINCT FROM NEW.project_id)
  EXECUTE FUNCTION task_counts_apply();

-- Attempts: one agent run of a task (projection of attemptWorkflow; the engine fills the rest in later migrations).
CREATE TABLE attempts (
  id             text PRIMARY KEY,
  task_id        text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  number         integer NOT NULL,
  llm            text NOT NULL,
  model          text,
  status         text NOT NULL DEFAULT 'created'
                 CHECK (status IN ('created', 'running', 'completed', 'failed', 'cancelled')),
  branch         text,
  base_branch    text,
  worktree_path  text,
  options        jsonb NOT NULL DEFAULT '{}'::jsonb,
  description    text NOT NULL DEFAULT '',
  files_changed  integer NOT NULL DEFAULT 0,
  files_created  integer NOT NULL DEFAULT 0,
  files_modified integer NOT NULL DEFAULT 0,
  files_deleted  integer NOT NULL DEFAULT 0,
  lines_added    integer NOT NULL DEFAULT 0,
  lines_removed  integer NOT NULL DEFAULT 0,
  input_tokens   bigint NOT NULL DEFAULT 0,
  output_tokens  bigint NOT NULL DEFAULT 0,
  total_cost     double precision NOT NULL DEFAULT 0,
  summary        text NOT NULL DEFAULT '',
  created_at     timestamptz NOT NULL DEFAULT now(),
  started_at     timestamptz,
  completed_at   timestamptz,
  cancelled_at   timestamptz,
  UNIQUE (task_id, number)
);
CREATE INDEX attempts_task_idx ON attempts (task_id, number);
CREATE INDEX attempts_status_idx ON attempts (status);
