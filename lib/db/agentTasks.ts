/** SQL for agent_tasks (multi-agent service). Every value is a parameter; writes from activities are idempotent. */
import type { Queryable } from './pool';

export const AGENT_TASK_STATUSES = ['assigned', 'running', 'completed', 'failed'] as const;
export type AgentTaskStatus = (typeof AGENT_TASK_STATUSES)[number];
export const AGENT_TASK_PRIORITIES = ['high', 'normal', 'low'] as const;
export type AgentTaskPriority = (typeof AGENT_TASK_PRIORITIES)[number];

export interface AgentTaskRow {
  id: string;
  agent: string;
  task: string;
  priority: AgentTaskPriority;
  status: AgentTaskStatus;
  result: string | null;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
  /** When Temporal took the actor's `assign` signal; null until then (docs/multi-agent.md#lost-assignments). */
  queued_at: Date | null;
  /** A replica's claim while it sends an assignment that looks lost. */
  delivery_claimed_until: Date | null;
}

export async function insertAgentTask(db: Queryable, t: { id: string; agent: string; task: string; priority: AgentTaskPriority }): Promise<AgentTaskRow> {
  const { rows } = await db.query<AgentTaskRow>('INSERT INTO agent_tasks (id, agent, task, priority) VALUES ($1, $2, $3, $4) RETURNING *', [
    t.id,
    t.agent,
    t.task,
    t.priority,
  ]);
  return rows[0] as AgentTaskRow;
}

export async function getAgentTask(db: Queryable, id: string): Promise<AgentTaskRow | undefined> {
  const { rows } = await db.query<AgentTaskRow>('SELECT * FROM agent_tasks WHERE id = $1', [id]);
  return rows[0];
}

export interface AgentTaskFilter {
  agent?: string;
  status?: AgentTaskStatus;
}

/** Newest first; total counts every row that matches the filter. */
export async function listAgentTasks(db: Queryable, f: AgentTaskFilter, limit: number, offset: number): Promise<{ rows: AgentTaskRow[]; total: number }> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.agent !== undefined) {
    params.push(f.agent);
    where.push(`agent = $${params.length}`);
  }
  if (f.status !== undefined) {
    params.push(f.status);
    where.push(`status = $${params.length}`);
  }
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const count = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM agent_tasks ${clause}`, params);
  const { rows } = await db.query<AgentTaskRow>(
    `SELECT * FROM agent_tasks ${clause} ORDER BY created_at DESC, id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, limit, offset],
  );
  return { rows, total: count.rows[0]?.n ?? 0 };
}

/**
 * Moves a task to running (first start time kept on a retry). Returns the row when it may run, undefined when it is
 * unknown or already finished (a duplicate delivery of the same task).
 */
export async function markAgentTaskRunning(db: Queryable, id: string): Promise<AgentTaskRow | undefined> {
  const { rows } = await db.query<AgentTaskRow>(
    `UPDATE agent_tasks SET status = 'running', started_at = COALESCE(started_at, clock_timestamp()), updated_at = clock_timestamp()
      WHERE id = $1 AND status IN ('assigned', 'running') RETURNING *`,
    [id],
  );
  return rows[0];
}

/** Records the outcome once: a task already completed or failed is left as it is (returns false). */
export async function finishAgentTask(
  db: Queryable,
  id: string,
  outcome: { status: 'completed' | 'failed'; result: string | null; error: string | null },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE agent_tasks SET status = $2, result = $3, error = $4, completed_at = clock_timestamp(), updated_at = clock_timestamp()
      WHERE id = $1 AND status IN ('assigned', 'running')`,
    [id, outcome.status, outcome.result, outcome.error],
  );
  return (rowCount ?? 0) > 0;
}

/** The assignment's `assign` signal was taken by Temporal: the row is no longer one the lost-assignment check sends. */
export async function markAgentTaskQueued(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE agent_tasks SET queued_at = clock_timestamp() WHERE id = $1 AND queued_at IS NULL', [id]);
}

/**
 * Fails a task whose assignment could not be sent, unless it was sent after all (by the lost-assignment check, while
 * the request waited): only a row still `assigned` and never queued is failed. False when it was left as it is.
 */
export async function failUnqueuedAgentTask(db: Queryable, id: string, error: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE agent_tasks SET status = 'failed', result = NULL, error = $2, completed_at = clock_timestamp(), updated_at = clock_timestamp()
      WHERE id = $1 AND status = 'assigned' AND queued_at IS NULL`,
    [id, error],
  );
  return (rowCount ?? 0) > 0;
}

export type LostAssignment = Pick<AgentTaskRow, 'id' | 'agent' | 'priority'>;

/**
 * Claims the oldest assignment of one of `agents` that looks lost: `assigned`, never queued, written more than
 * `lostAfterMs` ago, of an agent no roster removed, and not claimed by a replica (or its claim expired). The claim lasts `claimMs`; SKIP LOCKED and
 * the claim keep two replicas from taking the same row, and neither waits for the other.
 */
export async function claimLostAssignment(db: Queryable, agents: readonly string[], lostAfterMs: number, claimMs: number): Promise<LostAssignment | undefined> {
  const { rows } = await db.query<LostAssignment>(
    `UPDATE agent_tasks SET delivery_claimed_until = clock_timestamp() + $3 * interval '1 millisecond'
      WHERE id = (
        SELECT id FROM agent_tasks
         WHERE status = 'assigned' AND queued_at IS NULL AND agent = ANY($1::text[])
           AND created_at < clock_timestamp() - $2 * interval '1 millisecond'
           AND (delivery_claimed_until IS NULL OR delivery_claimed_until < clock_timestamp())
           AND NOT EXISTS (SELECT 1 FROM agent_roster r WHERE r.agent = agent_tasks.agent AND r.removed)
         ORDER BY created_at, id
         LIMIT 1
         FOR UPDATE SKIP LOCKED)
      RETURNING id, agent, priority`,
    [agents, lostAfterMs, claimMs],
  );
  return rows[0];
}

/** Gives up a claim (the signal failed): the next check, of any replica, tries again. */
export async function releaseAssignmentClaim(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE agent_tasks SET delivery_claimed_until = NULL WHERE id = $1', [id]);
}

/** Which of `agents` have unfinished tasks (the actor watch's one query per sweep: only those agents' actors are asked). */
export async function agentsWithUnfinishedTasks(db: Queryable, agents: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ agent: string }>(
    "SELECT DISTINCT agent FROM agent_tasks WHERE status IN ('assigned', 'running') AND agent = ANY($1::text[]) ORDER BY agent",
    [agents],
  );
  return rows.map((r) => r.agent);
}

/**
 * Fails the agent's unfinished tasks created before `createdBefore`, except `except` (the task whose assignment is
 * being sent right now), with `error`; returns their ids.
 */
export async function failUnfinishedAgentTasks(db: Queryable, agent: string, error: string, opts: { createdBefore: Date; except?: string }): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE agent_tasks SET status = 'failed', result = NULL, error = $2, completed_at = clock_timestamp(), updated_at = clock_timestamp()
      WHERE agent = $1 AND status IN ('assigned', 'running') AND created_at < $3 AND id IS DISTINCT FROM $4
      RETURNING id`,
    [agent, error, opts.createdBefore, opts.except ?? null],
  );
  return rows.map((r) => r.id);
}

/** Fails the unfinished tasks of every agent not in `agents` (agents removed from the configuration) with `error`. */
export async function failTasksOfOtherAgents(db: Queryable, agents: readonly string[], error: string): Promise<Pick<AgentTaskRow, 'id' | 'agent'>[]> {
  const { rows } = await db.query<Pick<AgentTaskRow, 'id' | 'agent'>>(
    `UPDATE agent_tasks SET status = 'failed', result = NULL, error = $2, completed_at = clock_timestamp(), updated_at = clock_timestamp()
      WHERE status IN ('assigned', 'running') AND agent <> ALL($1::text[])
      RETURNING id, agent`,
    [agents, error],
  );
  return rows;
}

/** The id of the agent's task that is running (the last started, should there be several), if any. */
export async function runningAgentTaskId(db: Queryable, agent: string): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>(
    "SELECT id FROM agent_tasks WHERE agent = $1 AND status = 'running' ORDER BY started_at DESC NULLS LAST, id DESC LIMIT 1",
    [agent],
  );
  return rows[0]?.id;
}
