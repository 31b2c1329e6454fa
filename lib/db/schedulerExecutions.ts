/** SQL for scheduler_executions and scheduler_execution_logs: projections written by workflowRunWorkflow's activities. */
import { FOREIGN_KEY_VIOLATION, type Queryable } from './pool';
import { jsonParam } from './storableText';

export type ExecutionStatus = 'running' | 'completed' | 'failed' | 'stopped';
export type TaskRunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'stopped' | 'skipped';
/** The levels of an execution's log lines, lowest first (the table's CHECK, migration 040). */
export const LOG_LEVELS = ['debug', 'info', 'warning', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface TaskRunState {
  name: string;
  type: 'script' | 'flow';
  status: TaskRunStatus;
  startedAt: string | null;
  completedAt: string | null;
  output: string;
  error?: string;
}

export interface ExecutionRow {
  id: string;
  workflow: string;
  /** the workflow's immutable id (scheduler_workflows.id) */
  workflow_id: string;
  temporal_workflow_id: string;
  trigger: 'manual' | 'schedule';
  status: ExecutionStatus;
  scheduled_at: Date | null;
  started_at: Date;
  completed_at: Date | null;
  tasks: TaskRunState[];
  error: string | null;
  /** the schedule that started it (null for manual runs, or once that schedule is deleted) */
  schedule_id: string | null;
  /** the input it ran with (null = none) */
  input: unknown;
  /** the execution this one re-runs */
  retry_of: string | null;
}

export interface ExecutionRecord {
  id: string;
  workflow: string;
  /**
   * The id of the workflow whose schedule or run request started the run (scheduler_workflows.id, immutable; a
   * workflow re-created under the name has another). Null on runs started before runs carried it: see upsertExecution.
   */
  workflowId?: string | null;
  temporalWorkflowId: string;
  trigger: 'manual' | 'schedule';
  status: ExecutionStatus;
  scheduledAt: string | null;
  startedAt: string;
  completedAt: string | null;
  tasks: TaskRunState[];
  error: string | null;
  scheduleId?: string | null;
  input?: unknown;
  retryOf?: string | null;
}

/** jsonb parameter: SQL NULL for no input (undefined or null), else the JSON text. */
const jsonOrNull = (v: unknown): string | null => (v === undefined || v === null ? null : jsonParam(v));


/** What an execution write did: changed the row (`previous`: its status before, undefined = inserted now), left a finished row as it was, or found no row it may write. */
export type ExecutionWrite = { outcome: 'written'; previous: ExecutionStatus | undefined } | { outcome: 'unchanged' } | { outcome: 'gone' };

/**
 * Writes an execution row. Idempotent, and a terminal state is never overwritten (a retried `running` write that
 * arrives late cannot resurrect a finished execution). The row belongs to its workflow by id (`workflowId`), not by
 * name: the write happens only while that workflow's row is there, and holds it (FOR KEY SHARE, as the foreign key
 * (workflow_id, workflow) would) until the transaction ends, so a run of a deleted workflow writes nothing, also when
 * a workflow with the same name was created since ("gone"), and a deletion waiting for the lock lists the row once
 * it is committed. The workflow's row is locked before any other key of the row is checked (the schedule's, the
 * retried execution's, which the deletion's cascade removes after taking the workflow's row), so the two wait for
 * each other in one order only. A row that was never written (the run's start failed or was stopped before its
 * write) is inserted by a later write while the run's workflow still exists. A record without `workflowId` (a run
 * started before runs carried it) takes the row's own, else the workflow of that name created before the run was
 * fired (`scheduledAt`, else `startedAt`), else writes nothing.
 */
export async function upsertExecution(db: Queryable, e: ExecutionRecord): Promise<ExecutionWrite> {
  // named: prepared once per connection, so the start of a run (whose first request waits for this statement) is not
  // parsed and planned each time
  const { rows } = await db.query<{ previous: ExecutionStatus | null; inserted: boolean }>({
    name: 'scheduler_execution_upsert',
    text: `WITH prev AS (SELECT status, workflow_id FROM scheduler_executions WHERE id = $1),
          owner AS (SELECT COALESCE($14::uuid, (SELECT workflow_id FROM prev),
                                    (SELECT w.id FROM scheduler_workflows w WHERE w.name = $2::text AND w.created_at <= COALESCE($6::timestamptz, $7::timestamptz))) AS id)
     INSERT INTO scheduler_executions AS x
            (id, workflow, workflow_id, temporal_workflow_id, trigger, status, scheduled_at, started_at, completed_at, tasks, error, schedule_id, input, retry_of)
     SELECT $1::uuid, w.name, w.id, $3::text, $4::text, $5::text, $6::timestamptz, $7::timestamptz, $8::timestamptz, $9::jsonb, $10::text,
             -- a schedule or an original deleted meanwhile is no reason to lose the run: the link is just empty
             (SELECT id FROM scheduler_schedules WHERE id = $11::uuid), $12::jsonb, (SELECT id FROM scheduler_executions WHERE id = $13::uuid)
       FROM owner JOIN scheduler_workflows w ON w.id = owner.id AND w.name = $2::text
        FOR KEY SHARE OF w
     ON CONFLICT (id) DO UPDATE
        SET status = EXCLUDED.status, completed_at = EXCLUDED.completed_at, tasks = EXCLUDED.tasks, error = EXCLUDED.error,
            scheduled_at = COALESCE(x.scheduled_at, EXCLUDED.scheduled_at)
      WHERE x.status = 'running'
     RETURNING (SELECT status FROM prev) AS previous, (xmax = 0) AS inserted`,
    values: [
      e.id,
      e.workflow,
      e.temporalWorkflowId,
      e.trigger,
      e.status,
      e.scheduledAt,
      e.startedAt,
      e.completedAt,
      jsonParam(e.tasks),
      e.error,
      e.scheduleId ?? null,
      jsonOrNull(e.input),
      e.retryOf ?? null,
      e.workflowId ?? null,
    ],
  });
  const r = rows[0];
  if (r) return { outcome: 'written', previous: r.inserted ? undefined : (r.previous ?? undefined) };
  return (await getExecution(db, e.id)) ? { outcome: 'unchanged' } : { outcome: 'gone' };
}

export async function getExecution(db: Queryable, id: string): Promise<ExecutionRow | undefined> {
  const { rows } = await db.query<ExecutionRow>('SELECT * FROM scheduler_executions WHERE id = $1', [id]);
  return rows[0];
}

/** A running execution to stop: its id and its Temporal workflow's. */
export interface RunningRun {
  executionId: string;
  temporalWorkflowId: string;
}

/** The running executions of these workflows (to stop them with the workflows). */
export async function runningRunsOf(db: Queryable, workflows: string[]): Promise<RunningRun[]> {
  if (!workflows.length) return [];
  const { rows } = await db.query<{ id: string; temporal_workflow_id: string }>(
    `SELECT id, temporal_workflow_id FROM scheduler_executions WHERE workflow = ANY($1::text[]) AND status = 'running' ORDER BY started_at, id`,
    [workflows],
  );
  return rows.map((r) => ({ executionId: r.id, temporalWorkflowId: r.temporal_workflow_id }));
}

export async function listExecutions(
  db: Queryable,
  filter: { workflow?: string; status?: ExecutionStatus },
  limit: number,
  offset = 0,
): Promise<ExecutionRow[]> {
  const { rows } = await db.query<ExecutionRow>(
    `SELECT * FROM scheduler_executions WHERE ($1::text IS NULL OR workflow = $1) AND ($2::text IS NULL OR status = $2)
      ORDER BY started_at DESC, id DESC LIMIT $3 OFFSET $4`,
    [filter.workflow ?? null, filter.status ?? null, limit, offset],
  );
  return rows;
}

export interface LogLine {
  key: string;
  ts: string;
  level: LogLevel;
  message: string;
}

/**
 * The row a manual run (or a retry) writes before it starts the workflow, so the execution is visible at once. False
 * when its workflow (by id: the one the caller read, not another of that name) or the execution it retries is gone:
 * deleted since the caller read it, or being deleted (the insert waits for the deletion's lock on the workflow's row,
 * taken first as in upsertExecution, then finds the row gone), so the run must not start.
 */
export async function insertManualExecution(
  db: Queryable,
  e: { id: string; workflow: string; workflowId: string; temporalWorkflowId: string; startedAt: string; tasks: TaskRunState[]; input?: unknown; retryOf?: string },
): Promise<boolean> {
  try {
    const { rowCount } = await db.query(
      `INSERT INTO scheduler_executions (id, workflow, workflow_id, temporal_workflow_id, trigger, status, started_at, tasks, input, retry_of)
       SELECT $1, w.name, w.id, $4, 'manual', 'running', $5, $6, $7::jsonb, $8
         FROM scheduler_workflows w WHERE w.id = $3 AND w.name = $2
          FOR KEY SHARE`,
      [e.id, e.workflow, e.workflowId, e.temporalWorkflowId, e.startedAt, jsonParam(e.tasks), jsonOrNull(e.input), e.retryOf ?? null],
    );
    return (rowCount ?? 0) > 0;
  } catch (err) {
    if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) return false;
    throw err;
  }
}

/**
 * Records that these executions are to stop (after Temporal took their cancel), for their running tasks' tries, which
 * read it every second (activities/scheduler/taskStop.ts).
 */
export async function requestExecutionStops(db: Queryable, executionIds: string[]): Promise<void> {
  if (!executionIds.length) return;
  await db.query('INSERT INTO scheduler_stop_requests (execution_id) SELECT unnest($1::uuid[]) ON CONFLICT (execution_id) DO NOTHING', [executionIds]);
}

/** Whether a stop of the execution was asked for. */
export async function stopRequested(db: Queryable, executionId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM scheduler_stop_requests WHERE execution_id = $1', [executionId]);
  return (rowCount ?? 0) > 0;
}

/** Retention: stop requests older than `olderThan`. */
export async function pruneStopRequests(db: Queryable, olderThan: Date): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM scheduler_stop_requests WHERE requested_at < $1', [olderThan]);
  return rowCount ?? 0;
}

/**
 * Marks a manual execution whose Temporal run could not be started (or whose start got no answer) as failed with
 * `error`, unless its run has begun meanwhile (a task is no longer `pending`: the start did reach Temporal). True when
 * marked: a run Temporal still starts later finds its row finished and ends at once without running a task
 * (activities/scheduler/executionProgress.ts, beginRun); false: the run is going.
 */
export async function failUnbegunExecution(db: Queryable, id: string, error: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE scheduler_executions SET status = 'failed', completed_at = now(), error = $2
      WHERE id = $1 AND status = 'running' AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(tasks) t WHERE t->>'status' <> 'pending')`,
    [id, error],
  );
  return (rowCount ?? 0) > 0;
}

/** A running execution as the reconciler sees it (api/scheduler/executionReconciler.ts). */
export interface UnfinishedExecution {
  id: string;
  workflow: string;
  temporal_workflow_id: string;
  started_at: Date;
  /** a task has left `pending`: the run began (its Temporal workflow existed then) */
  begun: boolean;
  /** where the walk stands after this row (started_at exactly, as text: a Date would drop its microseconds) */
  cursor: ExecutionCursor;
}

/** Where a walk over the running executions stands: the last row it saw, in (started_at, id) order. */
export interface ExecutionCursor {
  startedAt: string;
  id: string;
}

/**
 * Up to `limit` running executions started more than `olderThanMs` ago (by PostgreSQL's clock), after `after` in
 * (started_at, id) order (from the first when undefined): one page of the reconciler's walk, read through the
 * partial index of the running rows.
 */
export async function unfinishedExecutions(db: Queryable, olderThanMs: number, after: ExecutionCursor | undefined, limit: number): Promise<UnfinishedExecution[]> {
  const { rows } = await db.query<Omit<UnfinishedExecution, 'cursor'> & { started_key: string }>(
    `SELECT id, workflow, temporal_workflow_id, started_at, started_at::text AS started_key,
            EXISTS (SELECT 1 FROM jsonb_array_elements(tasks) t WHERE t->>'status' <> 'pending') AS begun
       FROM scheduler_executions
      WHERE status = 'running' AND started_at < now() - $1 * interval '1 millisecond'
        AND ($2::timestamptz IS NULL OR (started_at, id) > ($2::timestamptz, $3::uuid))
      ORDER BY started_at, id
      LIMIT $4`,
    [olderThanMs, after?.startedAt ?? null, after?.id ?? null, limit],
  );
  return rows.map(({ started_key, ...r }) => ({ ...r, cursor: { startedAt: started_key, id: r.id } }));
}

/** The log line's key of a reconciler's failure (one per execution: the row leaves `running` once). */
const RUN_LOST_LOG_KEY = 'reconciled';

/**
 * Fails a running execution that has no Temporal run (the reconciler asked Temporal), with an `error` log line of its
 * error. `begun: false` (no task had begun when it was read): only while that is still so, in the same statement, so
 * a run whose late start got through meanwhile (its first write made a task `running`) is left alone, and a run that
 * begins afterwards finds its row finished and ends at once (beginRun), as after failUnbegunExecution; the error is
 * `error` and the tasks stay `pending`. `begun: true` (its run existed and is gone): the running task fails with
 * `taskError` and the execution with `Task <name> failed: <taskError>` (`error` when no task was running), the pending
 * tasks are `skipped`. `stopped` (its run was terminated or cancelled in Temporal: an operator stopped it): the
 * execution and its running task end `stopped` instead, the execution's error is `error` as it stands, and the log
 * line is a `warning`. True when this call ended it (another process's reconciler may have been first).
 */
export async function failExecutionWithoutRun(
  db: Queryable,
  id: string,
  how: { begun: boolean; error: string; taskError: string; stopped?: boolean },
): Promise<boolean> {
  const { rows } = await db.query(
    `WITH failed AS (
       UPDATE scheduler_executions x
          SET status = $6::text, completed_at = now(),
              error = CASE WHEN $3::boolean AND $6::text = 'failed'
                        THEN COALESCE((SELECT 'Task ' || (t->>'name') || ' failed: ' || $4::text
                                         FROM jsonb_array_elements(x.tasks) WITH ORDINALITY AS a(t, i)
                                        WHERE t->>'status' = 'running' ORDER BY i LIMIT 1), $2::text)
                        ELSE $2::text END,
              tasks = CASE WHEN $3::boolean THEN
                (SELECT COALESCE(jsonb_agg(CASE t->>'status'
                          WHEN 'running' THEN t || jsonb_build_object('status', $6::text, 'error', $4::text,
                                                 'completedAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                          WHEN 'pending' THEN t || '{"status":"skipped"}'::jsonb
                          ELSE t END ORDER BY i), '[]'::jsonb)
                   FROM jsonb_array_elements(x.tasks) WITH ORDINALITY AS a(t, i))
                ELSE x.tasks END
        WHERE x.id = $1 AND x.status = 'running'
          AND ($3::boolean OR NOT EXISTS (SELECT 1 FROM jsonb_array_elements(x.tasks) t WHERE t->>'status' <> 'pending'))
       RETURNING x.id, x.completed_at, x.error),
     logged AS (
       INSERT INTO scheduler_execution_logs (execution_id, key, ts, level, message)
       SELECT id, $5, completed_at, $7::text, error FROM failed
       ON CONFLICT (execution_id, key) DO NOTHING)
     SELECT id FROM failed`,
    [id, how.error, how.begun, how.taskError, RUN_LOST_LOG_KEY, how.stopped ? 'stopped' : 'failed', how.stopped ? 'warning' : 'error'],
  );
  return rows.length > 0;
}

/** Appends log lines; a line whose key was already written is skipped (activity retries). */
export async function appendExecutionLogs(db: Queryable, executionId: string, lines: LogLine[]): Promise<void> {
  if (!lines.length) return;
  await db.query(
    `INSERT INTO scheduler_execution_logs (execution_id, key, ts, level, message)
     SELECT $1, l.key, l.ts, l.level, l.message
       FROM jsonb_to_recordset($2::jsonb) AS l(key text, ts timestamptz, level text, message text)
     ON CONFLICT (execution_id, key) DO NOTHING`,
    [executionId, jsonParam(lines)],
  );
}

/**
 * A page of an execution's log in the order it was written (`offset` lines skipped, at most `limit`, all when
 * undefined), of `minLevel` and above, and how many such lines there are: one statement, so both come from one
 * snapshot of a log that may be growing.
 */
export async function listExecutionLogs(
  db: Queryable,
  executionId: string,
  page: { offset?: number; limit?: number; minLevel?: LogLevel } = {},
): Promise<{ total: number; lines: { ts: Date; level: LogLevel; message: string }[] }> {
  const levels = LOG_LEVELS.slice(LOG_LEVELS.indexOf(page.minLevel ?? 'debug'));
  const { rows } = await db.query<{ total: number; ts: Date | null; level: LogLevel | null; message: string | null }>(
    `SELECT t.total, p.ts, p.level, p.message
       FROM (SELECT count(*)::int AS total FROM scheduler_execution_logs WHERE execution_id = $1 AND level = ANY($2)) t
       LEFT JOIN LATERAL (
         SELECT ts, level, message FROM scheduler_execution_logs WHERE execution_id = $1 AND level = ANY($2)
          ORDER BY ts, id OFFSET $3 LIMIT $4
       ) p ON true`,
    [executionId, levels, page.offset ?? 0, page.limit ?? null],
  );
  const total = rows[0]?.total ?? 0;
  const lines = rows.flatMap((r) => (r.ts && r.level && r.message !== null ? [{ ts: r.ts, level: r.level, message: r.message }] : []));
  return { total, lines };
}

/** Retention: deletes finished executions (and their logs) completed before `olderThan`. */
export async function pruneExecutions(db: Queryable, olderThan: Date): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM scheduler_executions WHERE status <> 'running' AND completed_at < $1`, [olderThan]);
  return rowCount ?? 0;
}
