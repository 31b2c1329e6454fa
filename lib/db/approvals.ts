/** SQL for approvals and approval_responses (the projection of approvalWorkflow). */
import { publishEvent } from '../events/publish';
import { afterInsertingTransaction, type Queryable } from './pool';

export const APPROVAL_TYPES = ['merge', 'deploy', 'custom'] as const;
export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'cancelled'] as const;
export const APPROVAL_DECISIONS = ['approved', 'rejected'] as const;
export type ApprovalType = (typeof APPROVAL_TYPES)[number];
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];
/** How an approval ends (the approval workflow's result). */
export type ApprovalFinalStatus = Exclude<ApprovalStatus, 'pending'>;

export interface ApprovalRow {
  id: string;
  task_attempt_id: string;
  type: ApprovalType;
  title: string;
  description: string | null;
  metadata: Record<string, unknown>;
  approvers: string[] | null;
  expires_at: Date | null;
  status: ApprovalStatus;
  created_by: string;
  created_at: Date;
  decided_at: Date | null;
  /** why it was closed, when its workflow was closed from Temporal's side (migration 106); else null */
  closed_reason: string | null;
}

/**
 * An approval as the API shows it: its row and the task its attempt belongs to, read through the attempt (an approval
 * has no column of its own for them: its attempt never moves to another task, and the task's title is the current one).
 */
export interface ApprovalWithTaskRow extends ApprovalRow {
  task_id: string;
  project_id: string;
  task_title: string;
}

/**
 * The approvals (alias `a`) with their task's id, project and title. An inner join: an approval goes with its attempt
 * and the attempt with its task (ON DELETE CASCADE), so every row has both.
 */
const SELECT_WITH_TASK = `SELECT a.*, t.id AS task_id, t.project_id, t.title AS task_title
  FROM approvals a JOIN attempts att ON att.id = a.task_attempt_id JOIN tasks t ON t.id = att.task_id`;

export interface ApprovalResponseRow {
  approval_id: string;
  approver: string;
  decision: ApprovalDecision;
  comment: string;
  responded_at: Date;
}

export interface NewApproval {
  id: string;
  taskAttemptId: string;
  type: ApprovalType;
  title: string;
  description: string | null;
  metadata: Record<string, unknown>;
  approvers: string[] | null;
  expiresAt: string | null;
  createdBy: string;
  createdAt: string;
}

/** Topics of an approval's events: the approval and its attempt. */
const topics = (a: Pick<ApprovalRow, 'id' | 'task_attempt_id'>) => [`approval:${a.id}`, `attempt:${a.task_attempt_id}`];

/**
 * What a written row returns for its event: the row, and its task and project read through its attempt (an event's
 * reader, e.g. a webhook receiver, links the approval to its task as the API's approval object does).
 */
const RETURNING_WITH_TASK = `RETURNING *,
  (SELECT att.task_id FROM attempts att WHERE att.id = approvals.task_attempt_id) AS task_id,
  (SELECT t.project_id FROM attempts att JOIN tasks t ON t.id = att.task_id WHERE att.id = approvals.task_attempt_id) AS project_id`;

function eventData(a: ApprovalRow & { task_id: string | null; project_id: string | null }) {
  return {
    approvalId: a.id,
    taskAttemptId: a.task_attempt_id,
    taskId: a.task_id,
    projectId: a.project_id,
    type: a.type,
    title: a.title,
    status: a.status,
    approvers: a.approvers,
    createdBy: a.created_by,
    expiresAt: a.expires_at?.toISOString() ?? null,
  };
}

/**
 * Inserts the approval once (idempotent: the API and, in runs started before `approval-waits-for-row`, the workflow's
 * first activity both call it) and publishes `approval.created` only when this call inserted it. Returns the row
 * either way.
 */
/**
 * Taken by the transaction that inserts an approval and starts its workflow before it commits; `approvalStored` takes
 * it too, so it waits for that transaction to end before it looks.
 */
export async function lockApprovalInsert(c: Queryable, id: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`approval:${id}`]);
}

/**
 * Whether approval `id` was stored: read once the transaction that inserted it (and started the workflow asking) has
 * ended, committed or rolled back (`lockApprovalInsert`; a session whose API process died ends when PostgreSQL
 * notices, a restart ends them all). False also for one that went with its attempt since. Run in a transaction of
 * its own (`withTransaction`).
 */
export async function approvalStored(c: Queryable, id: string): Promise<boolean> {
  await afterInsertingTransaction(c, (q) => lockApprovalInsert(q, id));
  const { rowCount } = await c.query('SELECT 1 FROM approvals WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

export async function insertApproval(db: Queryable, a: NewApproval): Promise<ApprovalRow> {
  const { rows } = await db.query<ApprovalRow & { task_id: string | null; project_id: string | null }>(
    `INSERT INTO approvals (id, task_attempt_id, type, title, description, metadata, approvers, expires_at, created_by, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (id) DO NOTHING ${RETURNING_WITH_TASK}`,
    [a.id, a.taskAttemptId, a.type, a.title, a.description, a.metadata, a.approvers, a.expiresAt, a.createdBy, a.createdAt],
  );
  const inserted = rows[0];
  if (inserted) {
    await publishEvent(db, { type: 'approval.created', topics: topics(inserted), data: eventData(inserted) });
    return inserted;
  }
  return (await getApproval(db, a.id)) as ApprovalRow;
}

export async function getApproval(db: Queryable, id: string): Promise<ApprovalWithTaskRow | undefined> {
  const { rows } = await db.query<ApprovalWithTaskRow>(`${SELECT_WITH_TASK} WHERE a.id = $1`, [id]);
  return rows[0];
}

export async function listResponses(db: Queryable, approvalId: string): Promise<ApprovalResponseRow[]> {
  const { rows } = await db.query<ApprovalResponseRow>('SELECT * FROM approval_responses WHERE approval_id = $1 ORDER BY responded_at, approver', [
    approvalId,
  ]);
  return rows;
}

/** Records one response (idempotent per approver). */
export async function insertResponse(
  db: Queryable,
  r: { approvalId: string; approver: string; decision: ApprovalDecision; comment: string; respondedAt: string },
): Promise<void> {
  await db.query(
    `INSERT INTO approval_responses (approval_id, approver, decision, comment, responded_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (approval_id, approver) DO NOTHING`,
    [r.approvalId, r.approver, r.decision, r.comment, r.respondedAt],
  );
}

/**
 * Moves a pending approval to a final status (idempotent: only a pending row moves) and publishes
 * `approval.<status>` in the same transaction. `reason` (an approval closed for it: its workflow terminated in
 * Temporal) is stored as `closed_reason` and put in the event's data. Returns whether this call moved it.
 */
export async function closeApproval(db: Queryable, id: string, status: ApprovalFinalStatus, at: string, reason?: string): Promise<boolean> {
  const { rows } = await db.query<ApprovalRow & { task_id: string | null; project_id: string | null }>(
    `UPDATE approvals SET status = $2, decided_at = $3, closed_reason = $4 WHERE id = $1 AND status = 'pending' ${RETURNING_WITH_TASK}`,
    [id, status, at, reason ?? null],
  );
  const row = rows[0];
  if (!row) return false;
  await publishEvent(db, { type: `approval.${status}`, topics: topics(row), data: reason ? { ...eventData(row), reason } : eventData(row) });
  return true;
}

/**
 * The ids of the pending approvals of the attempts, oldest first; `forUpdate` locks their rows until the transaction
 * ends (a response's projection write, which would decide one, waits for it or has committed and left it out).
 */
export async function pendingApprovalIdsOfAttempts(db: Queryable, attemptIds: string[], forUpdate = false): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM approvals WHERE task_attempt_id = ANY($1::text[]) AND status = 'pending' ORDER BY created_at, id${forUpdate ? ' FOR UPDATE' : ''}`,
    [attemptIds],
  );
  return rows.map((r) => r.id);
}

/** Pending approvals `user` may still answer: listed as an approver (or no list) and not yet responded. */
export async function listPendingFor(
  db: Queryable,
  user: string,
  opts: { type?: ApprovalType; limit: number; offset: number },
): Promise<{ rows: ApprovalWithTaskRow[]; total: number }> {
  const where = `a.status = 'pending' AND (a.approvers IS NULL OR $1 = ANY (a.approvers))
    AND NOT EXISTS (SELECT 1 FROM approval_responses r WHERE r.approval_id = a.id AND r.approver = $1)
    AND ($2::text IS NULL OR a.type = $2)`;
  const params = [user, opts.type ?? null];
  const [list, count] = await Promise.all([
    db.query<ApprovalWithTaskRow>(`${SELECT_WITH_TASK} WHERE ${where} ORDER BY a.created_at, a.id LIMIT $3 OFFSET $4`, [...params, opts.limit, opts.offset]),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM approvals a WHERE ${where}`, params),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

/**
 * Closed approvals (approved, rejected, expired, cancelled) `user` took part in or could have answered: listed as an
 * approver (or no list), the requester, or a responder. Latest decided first.
 */
export async function listHistoryFor(
  db: Queryable,
  user: string,
  opts: { type?: ApprovalType; limit: number; offset: number },
): Promise<{ rows: ApprovalWithTaskRow[]; total: number }> {
  const where = `a.status <> 'pending' AND (a.approvers IS NULL OR $1 = ANY (a.approvers) OR a.created_by = $1
      OR EXISTS (SELECT 1 FROM approval_responses r WHERE r.approval_id = a.id AND r.approver = $1))
    AND ($2::text IS NULL OR a.type = $2)`;
  const params = [user, opts.type ?? null];
  const [list, count] = await Promise.all([
    db.query<ApprovalWithTaskRow>(`${SELECT_WITH_TASK} WHERE ${where} ORDER BY a.decided_at DESC NULLS LAST, a.created_at DESC, a.id LIMIT $3 OFFSET $4`, [
      ...params,
      opts.limit,
      opts.offset,
    ]),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM approvals a WHERE ${where}`, params),
  ]);
  return { rows: list.rows, total: Number(count.rows[0]?.n ?? 0) };
}

/**
 * What blocks the merge of an attempt: a pending `merge` approval, or else the latest decided one when it was
 * rejected. Expired and cancelled requests do not block. Null when the merge may go ahead.
 */
export async function mergeBlocker(db: Queryable, attemptId: string): Promise<{ approvalId: string; status: 'pending' | 'rejected' } | null> {
  const { rows } = await db.query<{ id: string; status: 'pending' | 'rejected' | 'approved' }>(
    `SELECT id, status FROM approvals
      WHERE task_attempt_id = $1 AND type = 'merge' AND status IN ('pending', 'approved', 'rejected')
      ORDER BY (status = 'pending') DESC, created_at DESC, id DESC LIMIT 1`,
    [attemptId],
  );
  const r = rows[0];
  if (!r || r.status === 'approved') return null;
  return { approvalId: r.id, status: r.status };
}
