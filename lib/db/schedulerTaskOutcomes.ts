/**
 * SQL for scheduler_task_outcomes: what the tries of one scheduler task did (migration 097), so a try Temporal runs
 * again reports the task's real outcome instead of running it twice (docs/scheduler.md#task-outcomes). Every change
 * names the try that holds the task (`attempt`), so a try that lost it (taken over as lost) changes nothing.
 */
import type { Queryable } from './pool';
import { jsonParam } from './storableText';

/** The result of one scheduler task (a script's end, a flow's answer), as the workflow gets it. */
export interface TaskRunResult {
  ok: boolean;
  output: string;
  error?: string;
  startedAt: string;
  completedAt: string;
}

export type TaskOutcomeState = 'running' | 'unreachable' | 'done';

export interface TaskOutcome {
  state: TaskOutcomeState;
  /** the Temporal attempt of the try that holds (or held) the task */
  attempt: number;
  /** the holding try's last sign of life, as PostgreSQL's clock says (its exact text: compared, never computed with) */
  aliveMark: string;
  /** how long ago that was, by PostgreSQL's clock */
  staleMs: number;
  /** how many tries gave the task back (the platform could not be reached) */
  givenBack: number;
  result: TaskRunResult | null;
}

export interface TaskKey {
  executionId: string;
  taskIndex: number;
}

/**
 * Claims the task for the try `attempt`: a task no try has claimed yet, or one a try gave back (`unreachable`). Returns
 * how many tries gave it back before this one (migration 103), or undefined when another try holds it or its outcome
 * is recorded (read it with readTaskOutcome).
 */
export async function claimTask(db: Queryable, k: TaskKey, attempt: number): Promise<{ givenBack: number } | undefined> {
  // named (prepared once per connection): a first flow's request waits for this claim
  const { rows } = await db.query<{ given_back: number }>({
    name: 'scheduler_task_claim',
    text: `INSERT INTO scheduler_task_outcomes AS o (execution_id, task_index, state, attempt) VALUES ($1, $2, 'running', $3)
     ON CONFLICT (execution_id, task_index) DO UPDATE
        SET state = 'running', attempt = EXCLUDED.attempt, alive_at = now(), result = NULL, updated_at = now()
      WHERE o.state = 'unreachable'
     RETURNING o.given_back`,
    values: [k.executionId, k.taskIndex, attempt],
  });
  const r = rows[0];
  return r && { givenBack: r.given_back };
}

export async function readTaskOutcome(db: Queryable, k: TaskKey): Promise<TaskOutcome | undefined> {
  const { rows } = await db.query<{ state: TaskOutcomeState; attempt: number; alive_mark: string; stale_ms: number; result: TaskRunResult | null; given_back: number }>(
    `SELECT state, attempt, alive_at::text AS alive_mark, (extract(epoch FROM now() - alive_at) * 1000)::float8 AS stale_ms, result, given_back
       FROM scheduler_task_outcomes WHERE execution_id = $1 AND task_index = $2`,
    [k.executionId, k.taskIndex],
  );
  const r = rows[0];
  return r && { state: r.state, attempt: r.attempt, aliveMark: r.alive_mark, staleMs: r.stale_ms, result: r.result, givenBack: r.given_back };
}

/** The holding try's sign of life. */
export async function touchTask(db: Queryable, k: TaskKey, attempt: number): Promise<void> {
  await db.query(`UPDATE scheduler_task_outcomes SET alive_at = now() WHERE execution_id = $1 AND task_index = $2 AND attempt = $3 AND state = 'running'`, [
    k.executionId,
    k.taskIndex,
    attempt,
  ]);
}

/** Records the holding try's outcome; false when that try no longer holds the task (it was taken over as lost). */
export async function recordTaskOutcome(db: Queryable, k: TaskKey, attempt: number, result: TaskRunResult): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE scheduler_task_outcomes SET state = 'done', result = $4::jsonb, updated_at = now()
      WHERE execution_id = $1 AND task_index = $2 AND attempt = $3 AND state = 'running'`,
    [k.executionId, k.taskIndex, attempt, jsonParam(result)],
  );
  return (rowCount ?? 0) > 0;
}

/** Gives the task back: the platform could not be reached, nothing was sent, the next try may send (counted). */
export async function releaseTask(db: Queryable, k: TaskKey, attempt: number): Promise<void> {
  await db.query(
    `UPDATE scheduler_task_outcomes SET state = 'unreachable', given_back = given_back + 1, updated_at = now() WHERE execution_id = $1 AND task_index = $2 AND attempt = $3 AND state = 'running'`,
    [k.executionId, k.taskIndex, attempt],
  );
}

/**
 * Records `result` for a task whose holding try (`attempt`, last alive at `aliveMark`) is lost; false when that try
 * showed a sign of life or recorded its outcome meanwhile (its own outcome then stands).
 */
export async function recordLostTask(db: Queryable, k: TaskKey, attempt: number, aliveMark: string, result: TaskRunResult): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE scheduler_task_outcomes SET state = 'done', result = $5::jsonb, updated_at = now()
      WHERE execution_id = $1 AND task_index = $2 AND attempt = $3 AND state = 'running' AND alive_at = $4::timestamptz`,
    [k.executionId, k.taskIndex, attempt, aliveMark, jsonParam(result)],
  );
  return (rowCount ?? 0) > 0;
}

/** Retention: outcomes last changed before `olderThan`, except those of executions still running. */
export async function pruneTaskOutcomes(db: Queryable, olderThan: Date): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM scheduler_task_outcomes o
      WHERE o.updated_at < $1 AND o.alive_at < $1
        AND NOT EXISTS (SELECT 1 FROM scheduler_executions e WHERE e.id = o.execution_id AND e.status = 'running')`,
    [olderThan],
  );
  return rowCount ?? 0;
}
