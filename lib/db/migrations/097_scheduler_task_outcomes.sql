-- What the tries of a scheduler task did (service B), so that a try Temporal runs again reports the task's real
-- outcome instead of running it a second time (docs/scheduler.md#task-outcomes). A try claims its task before the
-- flow's request leaves ('running': its attempt, and `alive_at`, its worker's sign of life, renewed while it runs),
-- records the outcome ('done', with the result) before anything else that can stall, and gives the task back only when
-- the platform could not be reached at all ('unreachable': the next try may send). No foreign key: a run's first flow
-- is claimed beside the execution row's first write, which commits later; rows are pruned by age with the executions.
CREATE TABLE scheduler_task_outcomes (
  execution_id  uuid NOT NULL,
  task_index    integer NOT NULL,
  state         text NOT NULL CHECK (state IN ('running', 'unreachable', 'done')),
  attempt       integer NOT NULL,
  alive_at      timestamptz NOT NULL DEFAULT now(),
  result        jsonb,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (execution_id, task_index)
);
CREATE INDEX scheduler_task_outcomes_updated_idx ON scheduler_task_outcomes (updated_at);
