/**
 * Writes of attempt and process state with their events, each in one transaction (the row change and the outbox
 * event commit together), plus the task status rules attempts imply (docs/attempts.md).
 */
import type { Pool } from 'pg';
import type { Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import {
  abandonCreatedAttemptStart,
  attemptDurationSeconds,
  lockPendingStart,
  otherAttemptsActiveSince,
  restoreTaskBeforeStart,
  cancelAttemptRow,
  getAttempt,
  setAttemptMerged,
  type AttemptChanges,
  type AttemptRow,
} from '../db/attempts';
import type { ProcessRow } from '../db/processes';
import type { WorkerIdentity } from '../workerIdentity';
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

/**
 * After an attempt ended: review when one completed, failed when none did and none runs, else unchanged.
 * The counts are read by a statement that starts after the task row is locked (`taskLocked`, or a lock taken here
 * first), so of two attempts of one task ending at once the second sees the first's outcome.
 */
async function settleTask(c: Queryable, taskId: string, taskLocked = false): Promise<void> {
  if (!taskLocked) await c.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [taskId]);
  const { rows } = await c.query<{ status: TaskStatus; running: number; completed: number; failed: number }>(
    `SELECT t.status, n.running, n.completed, n.failed
       FROM tasks t,
            LATERAL (SELECT count(*) FILTER (WHERE status = 'running')::int AS running, count(*) FILTER (WHERE status = 'completed')::int AS completed,
                            count(*) FILTER (WHERE status = 'failed')::int AS failed
                       FROM attempts WHERE task_id = t.id) n
      WHERE t.id = $1`,
    [taskId],
  );
  const n = rows[0];
  if (!n || n.running > 0) return;
  const move = async (to: TaskStatus, onlyFrom: TaskStatus[]) => {
    if (n.status === to || !onlyFrom.includes(n.status)) return;
    const [row] = await updateTasks(c, [taskId], { status: to });
    if (row) await publishTaskStatusChanged(c, row, row.previous_status);
  };
  if (n.completed > 0) await move('review', ['pending', 'in_progress', 'failed']);
  else if (n.failed > 0) await move('failed', ['pending', 'in_progress']);
  else await move('pending', ['in_progress']);
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
 * undefined when the attempt was no longer running. Round trips: the attempt's update (statistics, outcome, token
 * totals, its project and its processes still running, in one statement), its event, the task's settling (one read,
 * and one update and one event statement when the task moves), besides BEGIN and COMMIT.
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
    const ch = changes ?? null;
    const { rows } = await c.query<AttemptRow & { was_running: boolean; t_project_id: string | null; running_processes: string[] }>(
      `WITH prev AS (SELECT id, task_id, status = 'running' AS was_running FROM attempts WHERE id = $1 FOR UPDATE),
            -- the task is locked now, so the settling read below (a later statement) sees every attempt of it that
            -- finished before this one, and one that finishes meanwhile waits here and sees this one
            task AS (SELECT t.project_id FROM tasks t JOIN prev ON t.id = prev.task_id FOR UPDATE OF t),
            tot AS (SELECT COALESCE(sum(input_tokens), 0) AS i, COALESCE(sum(output_tokens), 0) AS o, COALESCE(sum(estimated_cost), 0)::float8 AS c
                      FROM processes WHERE attempt_id = $1),
            upd AS (
              UPDATE attempts a SET
                files_changed = COALESCE($5::int, a.files_changed), files_created = COALESCE($6::int, a.files_created),
                files_modified = COALESCE($7::int, a.files_modified), files_deleted = COALESCE($8::int, a.files_deleted),
                lines_added = COALESCE($9::int, a.lines_added), lines_removed = COALESCE($10::int, a.lines_removed),
                output_changes = COALESCE($11::text[], a.output_changes),
                status = CASE WHEN prev.was_running THEN $2::text ELSE a.status END,
                completed_at = CASE WHEN prev.was_running THEN now() ELSE a.completed_at END,
                error = CASE WHEN prev.was_running THEN $3::text ELSE a.error END,
                summary = CASE WHEN prev.was_running THEN $4::text ELSE a.summary END,
                input_tokens = CASE WHEN prev.was_running THEN tot.i ELSE a.input_tokens END,
                output_tokens = CASE WHEN prev.was_running THEN tot.o ELSE a.output_tokens END,
                total_cost = CASE WHEN prev.was_running THEN tot.c ELSE a.total_cost END,
                updated_at = now()
               FROM prev, tot
              WHERE a.id = prev.id AND (prev.was_running OR $5::int IS NOT NULL)
              RETURNING a.*, prev.was_running)
       SELECT upd.*, task.project_id AS t_project_id,
              ARRAY(SELECT id FROM processes WHERE attempt_id = $1 AND status = 'running' ORDER BY created_at, id) AS running_processes
         FROM upd LEFT JOIN task ON true`,
      [attemptId, status, error, summary, ch?.filesChanged ?? null, ch?.filesCreated ?? null, ch?.filesModified ?? null, ch?.filesDeleted ?? null, ch?.linesAdded ?? null, ch?.linesRemoved ?? null, ch?.files ?? null],
    );
    const r = rows[0];
    if (!r?.was_running) return undefined;
    const { was_running: _w, t_project_id, running_processes, ...a } = r;
    // a process still running here never got its agent started (setup failed, repository missing): it failed too
    for (const id of running_processes) await recordProcessEnded(c, id, 'failed', null, error ?? 'the attempt ended before the agent ran');
    await publishAttemptEvent(c, `attempt.${status}`, a as AttemptRow, t_project_id ?? '');
    await settleTask(c, a.task_id, true);
    return a as AttemptRow;
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

/**
 * INSERT … SELECT of one process event per row of `cte` (a CTE of process rows), with the data publishProcessEvent
 * writes plus `extra` (a jsonb expression over the row), for statements that change a process and publish its event
 * in one round trip.
 */
export function insertProcessEventSql(cte: string, type: string, extra: string): string {
  return `INSERT INTO events (type, topics, data)
          SELECT ${type}, ARRAY['process:' || ${cte}.id, 'attempt:' || ${cte}.attempt_id, 'task:' || ${cte}.task_id, 'processes'],
                 jsonb_build_object('processId', ${cte}.id, 'attemptId', ${cte}.attempt_id, 'taskId', ${cte}.task_id, 'llm', ${cte}.llm,
                                    'status', ${cte}.status, 'exitCode', ${cte}.exit_code) || ${extra}
            FROM ${cte}
          RETURNING seq, type, topics, data, created_at`;
}

/** Seconds between two timestamptz columns with milliseconds, as (b − a) / 1000 of their Dates gives. */
const secondsSql = (a: string, b: string) => `round((extract(epoch FROM ${b} - ${a}) * 1000)::numeric) / 1000.0`;

/**
 * running → completed | failed | cancelled | stopped with its WebSocket event, in one statement; undefined when not
 * running. With `pid`, only while the row still names that agent: the end of a run that a later try took over
 * (another worker, while this one was paused) must not be recorded over the run that replaced it.
 */
export async function recordProcessEnded(
  c: Queryable,
  processId: string,
  status: 'completed' | 'failed' | 'cancelled' | 'stopped',
  exitCode: number | null,
  error: string | null,
  fence: { pid?: number } = {},
): Promise<ProcessRow | undefined> {
  const { rows } = await c.query<ProcessRow & { notified: string }>(
    `WITH p AS (
       UPDATE processes SET status = $2, exit_code = $3, error = $4, finished_at = now(),
              cancelled_at = CASE WHEN $2 = 'cancelled' THEN now() ELSE cancelled_at END,
              stopped_at = CASE WHEN $2 = 'stopped' THEN now() ELSE stopped_at END,
              progress = progress || jsonb_build_object('stage', $2::text, 'percentage', 100)
        WHERE id = $1 AND status = 'running' AND ($6::int IS NULL OR pid = $6) RETURNING *),
     ev AS (${insertProcessEventSql('p', '$5::text', `jsonb_build_object('error', $4::text, 'duration', (${secondsSql('p.started_at', 'p.finished_at')})::float8)`)})
     SELECT p.*, ${notifyInsertedEventsSql('ev')} AS notified FROM p`,
    [processId, status, exitCode, error, PROCESS_EVENT[status], fence.pid ?? null],
  );
  const r = rows[0];
  if (!r) return undefined;
  const { notified: _, ...row } = r;
  return row as ProcessRow;
}

/** The agent's process started: its pid, worker and stage, with process_started, in one statement. */
export async function recordProcessStarted(
  c: Queryable,
  processId: string,
  pid: number,
  kind: 'initial' | 'follow_up',
  worker?: WorkerIdentity,
): Promise<void> {
  await c.query(
    `WITH p AS (
       UPDATE processes SET pid = $2, started_at = now(), progress = progress || '{"stage":"running"}'::jsonb,
              worker_identity = $3, worker_host = $4 WHERE id = $1 RETURNING *),
     ev AS (${insertProcessEventSql('p', "'process_started'", `jsonb_build_object('pid', $2::int, 'kind', $5::text)`)})
     SELECT ${notifyInsertedEventsSql('ev')} AS notified`,
    [processId, pid, worker?.identity ?? null, worker?.host ?? null, kind],
  );
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

/** The merge, its event (`cleanup`: whether it was asked for; the removal that follows records its own outcome) and the task's move. */
export async function recordAttemptMerged(db: Pool, attemptId: string, commit: string, cleanup: boolean): Promise<AttemptRow | undefined> {
  return withTransaction(db, async (c) => {
    const a = await setAttemptMerged(c, attemptId, commit);
    if (!a) return undefined;
    await publishAttemptEvent(c, 'attempt.merged', a, await projectOf(c, a.task_id), { commitSha: commit, cleanup });
    await moveTask(c, a.task_id, 'completed');
    return a;
  });
}

/** A follow-up on a finished attempt makes it running again (and its task in_progress). */
export async function recordAttemptResumed(db: Pool, attemptId: string): Promise<void> {
  await withTransaction(db, (c) => resumeIn(c, attemptId));
}

/** A finished attempt back to running for a follow-up, with its event and the task's move (in the caller's transaction). */
async function resumeIn(c: Queryable, attemptId: string): Promise<void> {
  const { rows } = await c.query<AttemptRow>(
    `UPDATE attempts SET status = 'running', completed_at = NULL, error = NULL, updated_at = now() WHERE id = $1 AND status IN ('completed', 'failed') RETURNING *`,
    [attemptId],
  );
  const a = rows[0];
  if (!a) return;
  await publishAttemptEvent(c, 'attempt.started', a, await projectOf(c, a.task_id), { followUp: true });
  await moveTask(c, a.task_id, 'in_progress', ['review', 'failed', 'pending']);
}

/**
 * A follow-up's start in one transaction (follow-up-resumes-in-one): false when the attempt row is gone (deleted with
 * its task or project: the workflow cleans up instead), else the attempt back to running as recordAttemptResumed does.
 */
export async function resumeAttemptIfPresent(db: Pool, attemptId: string): Promise<boolean> {
  return withTransaction(db, async (c) => {
    const { rowCount } = await c.query('SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE', [attemptId]);
    if (!rowCount) return false;
    await resumeIn(c, attemptId);
    return true;
  });
}

/** An ISO-8601 UTC text of a timestamptz with milliseconds, as Date.toISOString() writes it. */
const isoSql = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Phase 3 of a start in one statement (docs/attempts.md, "Starting an attempt"): clear `start_pending_since` (only
 * the caller that clears it goes on) and publish task.status_changed and attempt.started with their NOTIFYs.
 * The task's move to `in_progress` was made by phase 1 when it kept `start_task_before` (then the change is announced
 * here, unless the task moved on since); otherwise (a `created` attempt's start, a start with an Idempotency-Key, a
 * start pending from before migration 082) it is made here. One statement, so a task's counter rows are locked only
 * for its duration, and not at all when phase 1 moved the task. Undefined when the start was confirmed already or the
 * attempt is gone.
 * Its commit does not wait for the WAL flush (synchronous_commit off for this statement's transaction alone): a
 * confirmation lost in a PostgreSQL crash leaves the start pending, and the reconciler (reconcilePendingStarts)
 * confirms it again, so nothing accepted is lost.
 */
export async function confirmAttemptStarted(db: Queryable, attemptId: string, projectId: string, processId: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow & { notified: string; moved_before: unknown }>(
    `WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)),
     c0 AS (
       SELECT id, start_task_before FROM attempts WHERE id = $1 AND start_pending_since IS NOT NULL FOR UPDATE),
     c AS (
       UPDATE attempts SET start_pending_since = NULL, start_task_before = NULL, updated_at = now() FROM c0 WHERE attempts.id = c0.id
       RETURNING attempts.*, c0.start_task_before AS moved_before),
     prev AS (
       SELECT t.id, t.status FROM tasks t JOIN c ON t.id = c.task_id WHERE c.moved_before IS NULL AND t.status <> 'in_progress' FOR UPDATE OF t),
     moved AS (
       UPDATE tasks SET status = 'in_progress', completed_at = NULL, updated_at = clock_timestamp() FROM prev WHERE tasks.id = prev.id
       RETURNING tasks.id, tasks.project_id, tasks.updated_at, prev.status AS previous_status),
     changed AS (
       SELECT m.id, m.project_id, m.updated_at AS at, m.previous_status FROM moved m
       UNION ALL
       SELECT t.id, t.project_id, (c.moved_before->>'movedAt')::timestamptz, c.moved_before->>'status'
         FROM c JOIN tasks t ON t.id = c.task_id WHERE c.moved_before IS NOT NULL AND t.status = 'in_progress'),
     ev AS (
       INSERT INTO events (type, topics, data)
       SELECT e.type, e.topics, e.data FROM (
         SELECT 1 AS ord, 'task.status_changed' AS type, ARRAY['task:' || m.id, 'project:' || m.project_id] AS topics,
                jsonb_build_object('taskId', m.id, 'projectId', m.project_id, 'status', 'in_progress', 'previousStatus', m.previous_status,
                                   'timestamp', ${isoSql('m.at')}) AS data
           FROM changed m
         UNION ALL
         SELECT 2, 'attempt.started', ARRAY['attempt:' || c.id, 'task:' || c.task_id, 'project:' || $2::text],
                jsonb_build_object('taskId', c.task_id, 'attemptId', c.id, 'llm', c.llm, 'status', c.status,
                                   'duration', GREATEST(0, extract(epoch FROM clock_timestamp() - c.started_at))::float8, 'error', c.error, 'processId', $3::text)
           FROM c) e
       ORDER BY e.ord
       RETURNING seq, type, topics, data, created_at)
     SELECT c.*, ${notifyInsertedEventsSql('ev')} AS notified FROM c, relaxed`,
    [attemptId, projectId, processId],
  );
  const r = rows[0];
  if (!r) return undefined;
  const { notified: _, moved_before: __, ...attempt } = r;
  return attempt as AttemptRow;
}

/**
 * Undoes a start whose workflow could not be started (docs/attempts.md, "Starting an attempt"), in one transaction:
 * a new attempt is deleted (its process and idempotency key cascade); a `created` one goes back to `created` without
 * its process. The task: when no other attempt of it started or changed meanwhile, it is put back exactly as it was
 * before phase 1 moved it, and nothing is announced (nothing was). Otherwise what the others did decides, as after an
 * attempt ends (settleTask: review when one completed, …); a task left in progress that only this start had moved
 * there is announced here, since the other starts found it in progress and did not.
 * False when the start was confirmed meanwhile (the attempt runs) or the attempt is gone.
 */
export async function undoAttemptStart(db: Pool, attemptId: string, processId: string, wasCreated: boolean): Promise<boolean> {
  if (wasCreated) return abandonCreatedAttemptStart(db, attemptId, processId);
  return withTransaction(db, async (c) => {
    const pending = await lockPendingStart(c, attemptId);
    if (!pending) return false;
    const { taskId, before } = pending;
    await c.query('DELETE FROM attempts WHERE id = $1', [attemptId]);
    if (!(await otherAttemptsActiveSince(c, taskId, attemptId, pending.startedAt))) {
      if (before) await restoreTaskBeforeStart(c, taskId, before);
      return true;
    }
    await settleTask(c, taskId, true);
    const t = before ? await getTask(c, taskId) : undefined;
    if (before && t?.status === 'in_progress') await publishTaskStatusChanged(c, { ...t, updated_at: new Date(before.movedAt) }, before.status);
    return true;
  });
}

export { getAttempt };
