/**
 * Writes of attempt and process state with their events, each in one transaction (the row change and the outbox
 * event commit together), plus the task status rules attempts imply (docs/attempts.md).
 */
import type { Pool } from 'pg';
import type { Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import {
  attemptDurationSeconds,
  attemptStatusCounts,
  cancelAttemptRow,
  finishAttemptRow,
  getAttempt,
  setAttemptChanges,
  setAttemptMerged,
  type AttemptChanges,
  type AttemptRow,
} from '../db/attempts';
import { finishProcessRow, type ProcessRow } from '../db/processes';
import { getTask, updateTasks, type TaskStatus } from '../db/tasks';
import { notifyInsertedEventsSql, publishEvent } from '../events/publish';
import { publishTaskStatusChanged } from '../events/taskEvents';

export function attemptTopics(a: Pick<AttemptRow, 'id' | 'task_id'>, projectId: string): string[] {
  return [`attempt:${a.id}`, `task:${a.task_id}`, `project:${projectId}`];
}

async function projectOf(c: Queryable, taskId: string): Promise<string> {
  return (await getTask(c, taskId))?.project_id ?? '';
}

/** Moves a task to `to` (no-op when already there), publishing task.status_changed. */
export async function moveTask(c: Queryable, taskId: string, to: TaskStatus, onlyFrom?: TaskStatus[]): Promise<void> {
  const t = await getTask(c, taskId);
  if (!t || t.status === to || (onlyFrom && !onlyFrom.includes(t.status))) return;
  const [row] = await updateTasks(c, [taskId], { status: to });
  if (row) await publishTaskStatusChanged(c, row, row.previous_status);
}

/** After an attempt ended: review when one completed, failed when none did and none runs, else unchanged. */
async function settleTask(c: Queryable, taskId: string): Promise<void> {
  const n = await attemptStatusCounts(c, taskId);
  if (n.running > 0) return;
  if (n.completed > 0) await moveTask(c, taskId, 'review', ['pending', 'in_progress', 'failed']);
  else if (n.failed > 0) await moveTask(c, taskId, 'failed', ['pending', 'in_progress']);
  else await moveTask(c, taskId, 'pending', ['in_progress']);
}

export async function publishAttemptEvent(c: Queryable, type: string, a: AttemptRow, projectId: string, extra: Record<string, unknown> = {}): Promise<void> {
  await publishEvent(c, {
    type,
    topics: attemptTopics(a, projectId),
    data: { taskId: a.task_id, attemptId: a.id, llm: a.llm, status: a.status, duration: attemptDurationSeconds(a), error: a.error, ...extra },
  });
}

export async function publishProcessEvent(c: Queryable, type: string, p: ProcessRow, extra: Record<string, unknown> = {}): Promise<void> {
  await publishEvent(c, {
    type,
    topics: [`process:${p.id}`, `attempt:${p.attempt_id}`, `task:${p.task_id}`, 'processes'],
    data: { processId: p.id, attemptId: p.attempt_id, taskId: p.task_id, llm: p.llm, status: p.status, exitCode: p.exit_code, ...extra },
  });
}

/**
 * running → completed | failed, with the change statistics when given, in one transaction. Returns the row, or
 * undefined when the attempt was no longer running.
 */
export async function recordAttemptFinished(
  db: Pool,
  attemptId: string,
  status: 'completed' | 'failed',
  error: string | null,
  summary: string,
  changes?: AttemptChanges,
): Promise<AttemptRow | undefined> {
  return withTransaction(db, async (c) => {
    // the change statistics of the run's commit are recorded whatever the status (a cancelled attempt keeps them)
    if (changes) await setAttemptChanges(c, attemptId, changes);
    const a = await finishAttemptRow(c, attemptId, status, { error, summary });
    if (!a) return undefined;
    // a process still running here never got its agent started (setup failed, repository missing): it failed too
    const { rows } = await c.query<{ id: string }>(`SELECT id FROM processes WHERE attempt_id = $1 AND status = 'running'`, [attemptId]);
    for (const p of rows) await recordProcessEnded(c, p.id, 'failed', null, error ?? 'the attempt ended before the agent ran');
    await publishAttemptEvent(c, `attempt.${status}`, a, await projectOf(c, a.task_id));
    await settleTask(c, a.task_id);
    return a;
  });
}

/** created | running → cancelled, with its running processes; undefined when the attempt had already finished. */
export async function recordAttemptCancelled(c: Queryable, attemptId: string, settle = true): Promise<AttemptRow | undefined> {
  const a = await cancelAttemptRow(c, attemptId);
  if (!a) return undefined;
  const { rows } = await c.query<{ id: string }>(`SELECT id FROM processes WHERE attempt_id = $1 AND status = 'running'`, [attemptId]);
  for (const p of rows) await recordProcessEnded(c, p.id, 'cancelled', null, 'attempt cancelled');
  await publishAttemptEvent(c, 'attempt.cancelled', a, await projectOf(c, a.task_id), { cancelledAt: a.cancelled_at?.toISOString() });
  if (settle) await settleTask(c, a.task_id);
  return a;
}

const PROCESS_EVENT: Record<string, string> = { completed: 'process_completed', failed: 'process_failed', stopped: 'process_stopped', cancelled: 'process_stopped' };

/** running → completed | failed | cancelled | stopped with its WebSocket event; undefined when not running. */
export async function recordProcessEnded(
  c: Queryable,
  processId: string,
  status: 'completed' | 'failed' | 'cancelled' | 'stopped',
  exitCode: number | null,
  error: string | null,
): Promise<ProcessRow | undefined> {
  const p = await finishProcessRow(c, processId, status, { exitCode, error });
  if (!p) return undefined;
  const duration = p.finished_at ? (p.finished_at.getTime() - p.started_at.getTime()) / 1000 : null;
  await publishProcessEvent(c, PROCESS_EVENT[status] as string, p, { error, duration });
  return p;
}

/**
 * A stop or cancel of a running process requested by a user (API or the stopProcess signal): the row moves first
 * and the running agent activity, which watches it, stops the process group. Undefined when it was not running.
 */
export async function requestProcessEnd(c: Queryable, processId: string, status: 'stopped' | 'cancelled'): Promise<ProcessRow | undefined> {
  const { rows } = await c.query<ProcessRow>(
    `UPDATE processes SET status = $2, finished_at = now(),
            stopped_at = CASE WHEN $2 = 'stopped' THEN now() END, cancelled_at = CASE WHEN $2 = 'cancelled' THEN now() END
      WHERE id = $1 AND status = 'running' RETURNING *`,
    [processId, status],
  );
  const row = rows[0];
  if (!row) return undefined;
  const duration = ((row.finished_at as Date).getTime() - row.started_at.getTime()) / 1000;
  await publishProcessEvent(c, 'process_stopped', row, { duration });
  return row;
}

export async function recordAttemptMerged(db: Pool, attemptId: string, commit: string, cleanedUp: boolean): Promise<AttemptRow | undefined> {
  return withTransaction(db, async (c) => {
    const a = await setAttemptMerged(c, attemptId, commit, cleanedUp);
    if (!a) return undefined;
    await publishAttemptEvent(c, 'attempt.merged', a, await projectOf(c, a.task_id), { commitSha: commit, cleanup: cleanedUp });
    await moveTask(c, a.task_id, 'completed');
    return a;
  });
}

/** A follow-up on a finished attempt makes it running again (and its task in_progress). */
export async function recordAttemptResumed(db: Pool, attemptId: string): Promise<void> {
  await withTransaction(db, async (c) => {
    const { rows } = await c.query<AttemptRow>(
      `UPDATE attempts SET status = 'running', completed_at = NULL, error = NULL, updated_at = now() WHERE id = $1 AND status IN ('completed', 'failed') RETURNING *`,
      [attemptId],
    );
    const a = rows[0];
    if (!a) return;
    await publishAttemptEvent(c, 'attempt.started', a, await projectOf(c, a.task_id), { followUp: true });
    await moveTask(c, a.task_id, 'in_progress', ['review', 'failed', 'pending']);
  });
}

/** An ISO-8601 UTC text of a timestamptz with milliseconds, as Date.toISOString() writes it. */
const isoSql = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Phase 3 of a start in one statement (docs/attempts.md, "Starting an attempt"): clear `start_pending_since` (only
 * the caller that clears it goes on), move the task to `in_progress` and publish task.status_changed and
 * attempt.started with their NOTIFYs. One statement, so the task's counter rows are locked only for its duration.
 * Undefined when the start was confirmed already or the attempt is gone.
 */
export async function confirmAttemptStarted(db: Queryable, attemptId: string, projectId: string, processId: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow & { notified: string }>(
    `WITH c AS (
       UPDATE attempts SET start_pending_since = NULL, updated_at = now() WHERE id = $1 AND start_pending_since IS NOT NULL RETURNING *),
     prev AS (
       SELECT t.id, t.status FROM tasks t JOIN c ON t.id = c.task_id WHERE t.status <> 'in_progress' FOR UPDATE OF t),
     moved AS (
       UPDATE tasks SET status = 'in_progress', completed_at = NULL, updated_at = clock_timestamp() FROM prev WHERE tasks.id = prev.id
       RETURNING tasks.id, tasks.project_id, tasks.updated_at, prev.status AS previous_status),
     ev AS (
       INSERT INTO events (type, topics, data)
       SELECT e.type, e.topics, e.data FROM (
         SELECT 1 AS ord, 'task.status_changed' AS type, ARRAY['task:' || m.id, 'project:' || m.project_id] AS topics,
                jsonb_build_object('taskId', m.id, 'projectId', m.project_id, 'status', 'in_progress', 'previousStatus', m.previous_status,
                                   'timestamp', ${isoSql('m.updated_at')}) AS data
           FROM moved m
         UNION ALL
         SELECT 2, 'attempt.started', ARRAY['attempt:' || c.id, 'task:' || c.task_id, 'project:' || $2::text],
                jsonb_build_object('taskId', c.task_id, 'attemptId', c.id, 'llm', c.llm, 'status', c.status,
                                   'duration', GREATEST(0, extract(epoch FROM clock_timestamp() - c.started_at))::float8, 'error', c.error, 'processId', $3::text)
           FROM c) e
       ORDER BY e.ord
       RETURNING seq, type, topics, data, created_at)
     SELECT c.*, ${notifyInsertedEventsSql('ev')} AS notified FROM c`,
    [attemptId, projectId, processId],
  );
  const r = rows[0];
  if (!r) return undefined;
  const { notified: _, ...attempt } = r;
  return attempt as AttemptRow;
}

export { getAttempt };
