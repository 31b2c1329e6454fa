/** SQL for the attempts table (the projection of attemptWorkflow). */
import type { CleanupError } from '../attempts/cleanup';
import type { Queryable } from './pool';

export const ATTEMPT_STATUSES = ['created', 'running', 'completed', 'failed', 'cancelled'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];
export const TERMINAL_ATTEMPT_STATUSES: readonly AttemptStatus[] = ['completed', 'failed', 'cancelled'];

export interface AttemptRow {
  id: string;
  task_id: string;
  number: number;
  llm: string;
  model: string | null;
  status: AttemptStatus;
  branch: string | null;
  base_branch: string | null;
  worktree_path: string | null;
  options: Record<string, unknown>;
  description: string;
  files_changed: number;
  files_created: number;
  files_modified: number;
  files_deleted: number;
  lines_added: number;
  lines_removed: number;
  input_tokens: string;
  output_tokens: string;
  total_cost: number;
  summary: string;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  cancelled_at: Date | null;
  base_commit: string | null;
  host_queue: string | null;
  error: string | null;
  merged_at: Date | null;
  merge_commit: string | null;
  cleaned_up: boolean;
  /** why the last removal of the worktree and branch did not remove them (migration 101); null otherwise */
  cleanup_error: CleanupError | null;
  output_changes: string[];
  updated_at: Date;
  /** set while the workflow start is not yet confirmed (migration 064) */
  start_pending_since: Date | null;
  /** While a start is pending: what its phase 1 moved the task from (migration 082); null otherwise. */
  start_task_before: { status: string; completedAt: string | null; updatedAt: string; movedAt: string } | null;
  /** set while a committed cancel's workflow cancel is not yet taken by Temporal (migration 108); null otherwise */
  workflow_cancel_owed_since: Date | null;
}

/** The fields of an attempt that its summary (and the task detail) shows. */
export type AttemptSummaryRow = Pick<
  AttemptRow,
  'id' | 'number' | 'llm' | 'status' | 'branch' | 'worktree_path' | 'started_at' | 'completed_at' | 'cancelled_at' | 'total_cost' | 'files_changed' | 'lines_added' | 'lines_removed'
>;

export async function listAttemptsForTask(db: Queryable, taskId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>('SELECT * FROM attempts WHERE task_id = $1 ORDER BY number', [taskId]);
  return rows;
}

/** Seconds from start to end (or to now while running); null before the attempt started. */
export function attemptDurationSeconds(a: Pick<AttemptRow, 'started_at' | 'completed_at' | 'cancelled_at'>, now = new Date()): number | null {
  if (!a.started_at) return null;
  const end = a.completed_at ?? a.cancelled_at ?? now;
  return Math.max(0, (end.getTime() - a.started_at.getTime()) / 1000);
}

export async function getAttempt(db: Queryable, id: string, forUpdate = false): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow>(`SELECT * FROM attempts WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0];
}

/** What preparing an attempt's worktree reads: the attempt and its project's repository, in one query. */
export interface AttemptWorktreeContext {
  attempt: AttemptRow;
  project: { id: string; git_repo_path: string | null; clone_status: string | null; clone_error: string | null; repo_branch: string; setup_script: string };
}

export async function getAttemptWorktreeContext(db: Queryable, id: string): Promise<AttemptWorktreeContext | undefined> {
  const { rows } = await db.query<AttemptRow & { p_id: string; p_git_repo_path: string | null; p_clone_status: string | null; p_clone_error: string | null; p_repo_branch: string; p_setup_script: string }>(
    `SELECT a.*, p.id AS p_id, p.git_repo_path AS p_git_repo_path, p.clone_status AS p_clone_status, p.clone_error AS p_clone_error,
            p.repo_branch AS p_repo_branch, p.setup_script AS p_setup_script
       FROM attempts a JOIN tasks t ON t.id = a.task_id JOIN projects p ON p.id = t.project_id WHERE a.id = $1`,
    [id],
  );
  const r = rows[0];
  if (!r) return undefined;
  const { p_id, p_git_repo_path, p_clone_status, p_clone_error, p_repo_branch, p_setup_script, ...attempt } = r;
  return {
    attempt: attempt as AttemptRow,
    project: { id: p_id, git_repo_path: p_git_repo_path, clone_status: p_clone_status, clone_error: p_clone_error, repo_branch: p_repo_branch, setup_script: p_setup_script },
  };
}

export interface NewAttempt {
  id: string;
  taskId: string;
  llm: string;
  model: string | null;
  status: 'created' | 'running';
  branchPrefix: string;
  baseBranch: string;
  options: Record<string, unknown>;
  description: string;
}

/**
 * Inserts the next-numbered attempt of a task; the caller holds the task row lock (numbers are per task). Numbers come
 * from the task's `attempts_numbered`, so a deleted attempt's number is never handed out again.
 */
export async function insertAttempt(db: Queryable, a: NewAttempt): Promise<AttemptRow> {
  const { rows } = await db.query<AttemptRow>(
    `WITH n AS (
       UPDATE tasks SET attempts_numbered = GREATEST(attempts_numbered, (SELECT COALESCE(max(number), 0) FROM attempts WHERE task_id = $2)) + 1
        WHERE id = $2 RETURNING attempts_numbered AS n)
     INSERT INTO attempts (id, task_id, number, llm, model, status, branch, base_branch, options, description, started_at, start_pending_since)
     SELECT $1, $2, n.n, $3, $4, $5, $6 || '/task-' || $2 || '-attempt-' || n.n, $7, $8, $9, CASE WHEN $5 = 'running' THEN now() END,
            CASE WHEN $5 = 'running' THEN now() END
       FROM n
     RETURNING *`,
    [a.id, a.taskId, a.llm, a.model, a.status, a.branchPrefix, a.baseBranch, a.options, a.description],
  );
  return rows[0] as AttemptRow;
}

/** The task fields a start needs besides the attempt (its prompt, commit message and events). */
export interface StartingTask {
  id: string;
  project_id: string;
  title: string;
  description: string;
}

/**
 * Phase 1 of a start in one statement (its own transaction): the next-numbered attempt of the task, `running` with
 * `start_pending_since`, based on the project's branch, and its first process with the prompt (task title,
 * description, attempt description, the non-blank ones); the task moves to `in_progress`, and what it was before is
 * kept in the attempt's `start_task_before` (the confirmation publishes the change, a refused start undoes it). The
 * task row is locked first, so numbers stay per task under concurrent starts and `start_task_before` is the task as
 * it was when this start got it. Undefined when the task does not exist.
 */
export async function insertStartingAttempt(
  db: Queryable,
  a: Omit<NewAttempt, 'status' | 'baseBranch'> & { processId: string },
): Promise<{ attempt: AttemptRow; task: StartingTask; processId: string; prompt: string } | undefined> {
  // a named statement: parsed and planned once per connection (~0.8 ms of a ~1.2 ms statement otherwise)
  const { rows } = await db.query<AttemptRow & { t_project_id: string; t_title: string; t_description: string; p_id: string; p_prompt: string }>({
    name: 'attempt_start',
    text: `WITH o AS (
       SELECT id, status, completed_at, updated_at FROM tasks WHERE id = $2 FOR UPDATE),
     n AS (
       UPDATE tasks t SET attempts_numbered = GREATEST(t.attempts_numbered, (SELECT COALESCE(max(number), 0) FROM attempts WHERE task_id = $2)) + 1,
              status = 'in_progress', completed_at = NULL,
              updated_at = CASE WHEN o.status <> 'in_progress' THEN clock_timestamp() ELSE t.updated_at END
         FROM o WHERE t.id = o.id
       RETURNING t.attempts_numbered AS n, t.project_id, t.title, t.description,
                 CASE WHEN o.status <> 'in_progress' THEN jsonb_build_object('status', o.status, 'completedAt', o.completed_at,
                                                                             'updatedAt', o.updated_at, 'movedAt', t.updated_at) END AS before),
     a AS (
       INSERT INTO attempts (id, task_id, number, llm, model, status, branch, base_branch, options, description, started_at, start_pending_since, start_task_before)
       SELECT $1, $2, n.n, $3, $4, 'running', $5 || '/task-' || $2 || '-attempt-' || n.n, (SELECT repo_branch FROM projects WHERE id = n.project_id),
              $6, $7, now(), now(), n.before
         FROM n
       RETURNING *),
     p AS (
       INSERT INTO processes (id, attempt_id, task_id, llm, model, kind, prompt)
       SELECT $8, a.id, a.task_id, a.llm, a.model, 'initial',
              concat_ws(E'\\n\\n', CASE WHEN n.title ~ '\\S' THEN n.title END, CASE WHEN n.description ~ '\\S' THEN n.description END,
                        CASE WHEN a.description ~ '\\S' THEN a.description END)
         FROM a, n
       RETURNING id, prompt)
     SELECT a.*, n.project_id AS t_project_id, n.title AS t_title, n.description AS t_description, p.id AS p_id, p.prompt AS p_prompt FROM a, n, p`,
    values: [a.id, a.taskId, a.llm, a.model, a.branchPrefix, a.options, a.description, a.processId],
  });
  const r = rows[0];
  if (!r) return undefined;
  const { t_project_id, t_title, t_description, p_id, p_prompt, ...attempt } = r;
  return { attempt: attempt as AttemptRow, task: { id: attempt.task_id, project_id: t_project_id, title: t_title, description: t_description }, processId: p_id, prompt: p_prompt };
}

export interface AttemptFilter {
  taskId?: string;
  llm?: string;
  status?: AttemptStatus;
}

export async function listAttempts(db: Queryable, f: AttemptFilter, limit: number, offset: number): Promise<{ rows: AttemptRow[]; total: number }> {
  const values: unknown[] = [];
  const clauses: string[] = [];
  const add = (col: string, v: unknown) => {
    values.push(v);
    clauses.push(`${col} = $${values.length}`);
  };
  if (f.taskId !== undefined) add('task_id', f.taskId);
  if (f.llm !== undefined) add('llm', f.llm);
  if (f.status !== undefined) add('status', f.status);
  const w = clauses.length ? `WHERE ${clauses.join(' AND ')}` : '';
  const [list, count] = await Promise.all([
    db.query<AttemptRow>(`SELECT * FROM attempts ${w} ORDER BY created_at DESC, id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`, [...values, limit, offset]),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM attempts ${w}`, values),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

export type StartTaskBefore = NonNullable<AttemptRow['start_task_before']>;

/**
 * Undoes a `created` attempt's start whose workflow could not be started: it goes back to `created` without its
 * process. False when the start was confirmed meanwhile (the attempt runs) or the attempt is gone.
 */
export async function abandonCreatedAttemptStart(db: Queryable, id: string, processId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE attempts SET status = 'created', started_at = NULL, start_pending_since = NULL, start_task_before = NULL, updated_at = now()
      WHERE id = $1 AND start_pending_since IS NOT NULL`,
    [id],
  );
  if (!rowCount) return false;
  await db.query('DELETE FROM processes WHERE id = $1', [processId]);
  return true;
}

/**
 * Locks a pending start's attempt row, then its task's row (the order every writer of both takes), for undoing it.
 * Undefined when the start is no longer pending (confirmed meanwhile) or the attempt is gone.
 */
export async function lockPendingStart(
  c: Queryable,
  id: string,
): Promise<{ taskId: string; startedAt: Date; before: StartTaskBefore | null } | undefined> {
  const a = await c.query<{ task_id: string; started_at: Date; start_task_before: StartTaskBefore | null }>(
    'SELECT task_id, started_at, start_task_before FROM attempts WHERE id = $1 AND start_pending_since IS NOT NULL FOR UPDATE',
    [id],
  );
  const row = a.rows[0];
  if (!row) return undefined;
  await c.query('SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE', [row.task_id]);
  return { taskId: row.task_id, startedAt: row.started_at, before: row.start_task_before };
}

/**
 * Whether another attempt of the task started or changed since `since` (a start being undone then cannot simply put
 * the task back: what those attempts did decides). Read after the task row lock, so it sees every such attempt.
 */
export async function otherAttemptsActiveSince(c: Queryable, taskId: string, attemptId: string, since: Date): Promise<boolean> {
  const { rows } = await c.query(
    `SELECT 1 FROM attempts WHERE task_id = $1 AND id <> $2 AND status <> 'created' AND (started_at >= $3 OR updated_at >= $3) LIMIT 1`,
    [taskId, attemptId, since],
  );
  return rows.length > 0;
}

/**
 * Puts a task back exactly as it was before a start (being undone) moved it to `in_progress`, unless it moved on
 * since. The caller holds the task row lock (lockPendingStart).
 */
export async function restoreTaskBeforeStart(c: Queryable, taskId: string, before: StartTaskBefore): Promise<void> {
  await c.query(
    `UPDATE tasks SET status = $2, completed_at = $3::timestamptz, updated_at = $4::timestamptz WHERE id = $1 AND status = 'in_progress'`,
    [taskId, before.status, before.completedAt, before.updatedAt],
  );
}

/** Attempts whose start has been pending since before `olderThan` (their starting process died or stalled). */
export async function stalePendingStarts(db: Queryable, olderThan: Date, limit = 100): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    'SELECT * FROM attempts WHERE start_pending_since IS NOT NULL AND start_pending_since < $1 ORDER BY start_pending_since LIMIT $2',
    [olderThan, limit],
  );
  return rows;
}

/** created → running; returns undefined when the attempt was not in `created`. */
export async function markAttemptRunning(db: Queryable, id: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow>(
    `UPDATE attempts SET status = 'running', started_at = now(), start_pending_since = now(), updated_at = now() WHERE id = $1 AND status = 'created' RETURNING *`,
    [id],
  );
  return rows[0];
}

/**
 * Records where an attempt's worktree is; false (nothing recorded) when the attempt was cancelled or deleted
 * meanwhile: whoever cancels or deletes it has already read where it was, so the caller removes what it made.
 */
export async function setAttemptWorktree(
  db: Queryable,
  id: string,
  w: { worktreePath: string; branch: string; baseBranch: string; baseCommit: string; hostQueue: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE attempts SET worktree_path = $2, branch = $3, base_branch = $4, base_commit = $5, host_queue = $6, updated_at = now()
      WHERE id = $1 AND status <> 'cancelled'`,
    [id, w.worktreePath, w.branch, w.baseBranch, w.baseCommit, w.hostQueue],
  );
  return (rowCount ?? 0) > 0;
}

export interface AttemptChanges {
  filesChanged: number;
  filesCreated: number;
  filesModified: number;
  filesDeleted: number;
  linesAdded: number;
  linesRemoved: number;
  files: string[];
}

export async function setAttemptChanges(db: Queryable, id: string, c: AttemptChanges): Promise<void> {
  await db.query(
    `UPDATE attempts SET files_changed = $2, files_created = $3, files_modified = $4, files_deleted = $5, lines_added = $6,
            lines_removed = $7, output_changes = $8, updated_at = now() WHERE id = $1`,
    [id, c.filesChanged, c.filesCreated, c.filesModified, c.filesDeleted, c.linesAdded, c.linesRemoved, c.files],
  );
}

/** Sums token/cost totals again (follow-ups after completion add to them). */
export async function refreshAttemptTotals(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE attempts a SET input_tokens = p.i, output_tokens = p.o, total_cost = p.c, updated_at = now()
       FROM (SELECT COALESCE(sum(input_tokens), 0) AS i, COALESCE(sum(output_tokens), 0) AS o, COALESCE(sum(estimated_cost), 0)::float8 AS c
               FROM processes WHERE attempt_id = $1) p
      WHERE a.id = $1`,
    [id],
  );
}

/** created | running → cancelled; undefined when the attempt had already finished. */
export async function cancelAttemptRow(db: Queryable, id: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow>(
    `UPDATE attempts SET status = 'cancelled', cancelled_at = now(), updated_at = now() WHERE id = $1 AND status IN ('created', 'running') RETURNING *`,
    [id],
  );
  return rows[0];
}

/** The merge; its cleanup, when asked for, is recorded by the removal itself (setAttemptCleanedUp or setAttemptCleanupFailed). */
export async function setAttemptMerged(db: Queryable, id: string, commit: string): Promise<AttemptRow | undefined> {
  const { rows } = await db.query<AttemptRow>(`UPDATE attempts SET merged_at = now(), merge_commit = $2, updated_at = now() WHERE id = $1 RETURNING *`, [id, commit]);
  return rows[0];
}

export async function setAttemptCleanedUp(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE attempts SET cleaned_up = true, cleanup_error = NULL, updated_at = now() WHERE id = $1', [id]);
}

/** The removal of the attempt's worktree and branch left them (or part of them) there, for `error`. */
export async function setAttemptCleanupFailed(db: Queryable, id: string, error: CleanupError): Promise<void> {
  await db.query('UPDATE attempts SET cleaned_up = false, cleanup_error = $2, updated_at = now() WHERE id = $1', [id, JSON.stringify(error)]);
}

/** What a delete of attempts removes: these attempts, these tasks' (a task's, the bulk delete) or a project's. */
export type AttemptsToDelete = { attemptIds: string[] } | { taskIds: string[] } | { projectId: string };

/** Tasks by id, or all of a project's. */
export type TasksToLock = { taskIds: string[] } | { projectId: string };

/**
 * Locks tasks and all their attempts FOR UPDATE until the transaction ends, in the order every writer of an attempt
 * and its task takes them: the attempts first, then the tasks (starting a created attempt, cancelling one, undoing a
 * start and the attempt workflow's projections lock the attempt, then its task). Tasks first, as deletes and the
 * task cancel did, deadlocked with any of those. An attempt inserted between the two statements (a start holds its
 * task's lock until it commits) is locked by the third; none is added after it, since a new attempt needs its task's
 * row. A project's row is locked before anything (no new task of it meanwhile).
 */
export async function lockTasksWithAttempts(c: Queryable, what: TasksToLock): Promise<{ taskIds: string[]; attemptIds: string[] }> {
  const [where, param] = 'projectId' in what ? ['project_id = $1', what.projectId] : ['id = ANY($1::text[])', what.taskIds];
  if ('projectId' in what) await c.query('SELECT 1 FROM projects WHERE id = $1 FOR UPDATE', [what.projectId]);
  await c.query(`SELECT 1 FROM attempts WHERE task_id IN (SELECT id FROM tasks WHERE ${where}) ORDER BY id FOR UPDATE`, [param]);
  const tasks = await c.query<{ id: string }>(`SELECT id FROM tasks WHERE ${where} ORDER BY id FOR UPDATE`, [param]);
  const taskIds = tasks.rows.map((r) => r.id);
  const attempts = await c.query<{ id: string }>('SELECT id FROM attempts WHERE task_id = ANY($1::text[]) ORDER BY id FOR UPDATE', [taskIds]);
  return { taskIds, attemptIds: attempts.rows.map((r) => r.id) };
}

/**
 * Locks the rows a delete of attempts removes until the transaction ends (lockTasksWithAttempts' order for a task's
 * or a project's), and returns the ids of the attempts. A new task, attempt or approval needs its owner's row (a
 * key-share lock of its foreign key), so none is added to them meanwhile: what the transaction reads of their
 * children after this is all the delete takes with it.
 */
export async function lockAttemptsToDelete(c: Queryable, what: AttemptsToDelete): Promise<string[]> {
  if ('attemptIds' in what) {
    const { rows } = await c.query<{ id: string }>('SELECT id FROM attempts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [what.attemptIds]);
    return rows.map((r) => r.id);
  }
  return (await lockTasksWithAttempts(c, what)).attemptIds;
}

/** Whether the attempt exists, holding its row's key-share lock until the transaction ends (no delete of it meanwhile). */
export async function lockAttemptKey(c: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await c.query('SELECT 1 FROM attempts WHERE id = $1 FOR KEY SHARE', [id]);
  return (rowCount ?? 0) > 0;
}

export async function deleteAttemptRow(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM attempts WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

/** Attempts of the managed branches of a project: branch name → (taskId, attemptId). */
export async function attemptBranchesOfProject(db: Queryable, projectId: string): Promise<{ branch: string; task_id: string; id: string }[]> {
  const { rows } = await db.query<{ branch: string; task_id: string; id: string }>(
    `SELECT a.branch, a.task_id, a.id FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.project_id = $1 AND a.branch IS NOT NULL`,
    [projectId],
  );
  return rows;
}

/** The attempt a start's idempotency key names, and the hash of the body it was first sent with (null: sent before hashes were kept). */
export async function findIdempotentAttempt(db: Queryable, scope: string, key: string): Promise<{ attemptId: string; requestHash: string | null } | undefined> {
  const { rows } = await db.query<{ attempt_id: string; request_hash: string | null }>(
    'SELECT attempt_id, request_hash FROM attempt_idempotency_keys WHERE scope = $1 AND key = $2',
    [scope, key],
  );
  return rows[0] ? { attemptId: rows[0].attempt_id, requestHash: rows[0].request_hash } : undefined;
}

/** Claims an idempotency key for a request (the hash of its body); false when another request holds it (a concurrent one waits for the first to commit). */
export async function claimIdempotencyKey(db: Queryable, scope: string, key: string, attemptId: string, requestHash: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'INSERT INTO attempt_idempotency_keys (scope, key, attempt_id, request_hash) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
    [scope, key, attemptId, requestHash],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Binds a follow-up's idempotency key (scope `follow-up:<attemptId>`) to the hash of its body unless a request did
 * before: the hash the key is bound to (this one's, or the first request's; null for a row without one).
 * Undefined when the attempt is gone. Concurrent requests with one key: the second's insert waits for the first's
 * commit, then reads the hash it bound.
 */
export async function bindFollowUpKey(db: Queryable, attemptId: string, key: string, requestHash: string): Promise<{ requestHash: string | null } | undefined> {
  const scope = `follow-up:${attemptId}`;
  const inserted = await db.query(
    'INSERT INTO attempt_idempotency_keys (scope, key, attempt_id, request_hash) SELECT $1::text, $2::text, id, $4::text FROM attempts WHERE id = $3 ON CONFLICT DO NOTHING',
    [scope, key, attemptId, requestHash],
  );
  if ((inserted.rowCount ?? 0) > 0) return { requestHash };
  const { rows } = await db.query<{ request_hash: string | null }>('SELECT request_hash FROM attempt_idempotency_keys WHERE scope = $1 AND key = $2', [scope, key]);
  return rows[0] ? { requestHash: rows[0].request_hash } : undefined;
}
