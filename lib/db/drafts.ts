/** SQL for drafts, follow-up drafts, retry drafts, follow-up queues and draft queues of an attempt. */
import { publishEvent } from '../events/publish';
import { lockAttemptKey } from './attempts';
import { afterInsertingTransaction, type Queryable } from './pool';

export const DRAFT_TYPES = ['follow_up', 'retry', 'initial'] as const;
export type DraftType = (typeof DRAFT_TYPES)[number];

export interface DraftRow {
  id: string;
  task_attempt_id: string;
  content: string;
  type: DraftType;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface FollowUpDraftRow {
  id: string;
  task_attempt_id: string;
  prompt: string;
  auto_send: boolean;
  send_after: Date | null;
  status: 'draft' | 'scheduled' | 'sent' | 'failed';
  error: string | null;
  created_at: Date;
  sent_at: Date | null;
}

export interface RetryDraftRow {
  id: string;
  task_attempt_id: string;
  original_prompt: string;
  retry_prompt: string;
  retry_reason: string;
  created_at: Date;
}

export interface QueueItemRow {
  id: string;
  queue_id: string;
  prompt: string;
  order: number;
  status: string;
}

export interface DraftQueueItemRow {
  id: string;
  queue_id: string;
  title: string;
  description: string;
  order: number;
  status: string;
}

/** The project of an attempt (drafts stream on `project:<id>`); undefined when the attempt does not exist. */
export async function attemptProject(db: Queryable, attemptId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ project_id: string }>('SELECT t.project_id FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.id = $1', [attemptId]);
  return rows[0]?.project_id;
}

/**
 * attemptProject for a transaction that writes a row of the attempt (a draft, a queue): the project's and the
 * attempt's rows are key-share locked until it ends, in the order a delete locks them (project, then attempts), so
 * a delete of the attempt, its task or its project waits for the commit and removes the new row with the others.
 * Without the locks such a delete could commit between the check and the insert, whose foreign key then failed
 * (a 500). undefined when the attempt does not exist (any more).
 */
export async function lockAttemptProject(c: Queryable, attemptId: string): Promise<string | undefined> {
  const projectId = await attemptProject(c, attemptId);
  if (projectId === undefined) return undefined;
  await c.query('SELECT 1 FROM projects WHERE id = $1 FOR KEY SHARE', [projectId]);
  return (await lockAttemptKey(c, attemptId)) ? projectId : undefined;
}

/** draft_created / draft_updated (field draft) or draft_deleted (field draftId) on `project:<id>`. */
export async function publishDraftEvent(
  db: Queryable,
  projectId: string,
  attemptId: string,
  event: { type: 'draft_created' | 'draft_updated'; draft: Record<string, unknown> } | { type: 'draft_deleted'; draftId: string },
): Promise<void> {
  const data = event.type === 'draft_deleted' ? { draftId: event.draftId, taskAttemptId: attemptId } : { draft: event.draft };
  await publishEvent(db, { type: event.type, topics: [`project:${projectId}`, `attempt:${attemptId}`], data });
}

export async function insertDraft(db: Queryable, d: { id: string; attemptId: string; content: string; type: DraftType; metadata: Record<string, unknown> }): Promise<DraftRow> {
  const { rows } = await db.query<DraftRow>(
    'INSERT INTO drafts (id, task_attempt_id, content, type, metadata) VALUES ($1, $2, $3, $4, $5) RETURNING *',
    [d.id, d.attemptId, d.content, d.type, d.metadata],
  );
  return rows[0] as DraftRow;
}

export async function getDraft(db: Queryable, attemptId: string, id: string): Promise<DraftRow | undefined> {
  const { rows } = await db.query<DraftRow>('SELECT * FROM drafts WHERE id = $1 AND task_attempt_id = $2', [id, attemptId]);
  return rows[0];
}

export async function deleteDraft(db: Queryable, attemptId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM drafts WHERE id = $1 AND task_attempt_id = $2', [id, attemptId]);
  return (rowCount ?? 0) > 0;
}

/**
 * Taken by the transaction that inserts a follow-up draft (autoSend) or queue (autoExecute) and starts its workflow
 * before it commits; `followUpStored` takes it too, so it waits for that transaction to end before it looks.
 */
export async function lockFollowUpInsert(c: Queryable, id: string): Promise<void> {
  await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`follow-up:${id}`]);
}

/**
 * Whether the follow-up draft or queue `id` was stored: read once the transaction that inserted it (and started the
 * workflow asking) has ended, committed or rolled back (`lockFollowUpInsert`; a session whose API process died ends
 * when PostgreSQL notices, a restart ends them all). Run in a transaction of its own (`withTransaction`).
 */
export async function followUpStored(c: Queryable, kind: 'draft' | 'queue', id: string): Promise<boolean> {
  await afterInsertingTransaction(c, (q) => lockFollowUpInsert(q, id));
  const { rowCount } = await c.query(kind === 'draft' ? 'SELECT 1 FROM follow_up_drafts WHERE id = $1' : 'SELECT 1 FROM follow_up_queues WHERE id = $1', [id]);
  return (rowCount ?? 0) > 0;
}

export async function insertFollowUpDraft(
  db: Queryable,
  d: { id: string; attemptId: string; prompt: string; autoSend: boolean; sendAfter: string | null; status: FollowUpDraftRow['status'] },
): Promise<FollowUpDraftRow> {
  const { rows } = await db.query<FollowUpDraftRow>(
    'INSERT INTO follow_up_drafts (id, task_attempt_id, prompt, auto_send, send_after, status) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *',
    [d.id, d.attemptId, d.prompt, d.autoSend, d.sendAfter, d.status],
  );
  return rows[0] as FollowUpDraftRow;
}

/** Moves a scheduled follow-up draft to sent/failed (idempotent); returns the row when this call moved it. */
export async function finishFollowUpDraft(db: Queryable, id: string, status: 'sent' | 'failed', error: string | null): Promise<FollowUpDraftRow | undefined> {
  const { rows } = await db.query<FollowUpDraftRow>(
    `UPDATE follow_up_drafts SET status = $2, error = $3, sent_at = CASE WHEN $2 = 'sent' THEN now() ELSE sent_at END
      WHERE id = $1 AND status = 'scheduled' RETURNING *`,
    [id, status, error],
  );
  return rows[0];
}

export async function insertRetryDraft(
  db: Queryable,
  d: { id: string; attemptId: string; originalPrompt: string; retryPrompt: string; retryReason: string },
): Promise<RetryDraftRow> {
  const { rows } = await db.query<RetryDraftRow>(
    'INSERT INTO retry_drafts (id, task_attempt_id, original_prompt, retry_prompt, retry_reason) VALUES ($1, $2, $3, $4, $5) RETURNING *',
    [d.id, d.attemptId, d.originalPrompt, d.retryPrompt, d.retryReason],
  );
  return rows[0] as RetryDraftRow;
}

export async function deleteRetryDraft(db: Queryable, attemptId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM retry_drafts WHERE id = $1 AND task_attempt_id = $2', [id, attemptId]);
  return (rowCount ?? 0) > 0;
}

export async function insertFollowUpQueue(
  db: Queryable,
  q: { id: string; attemptId: string; autoExecute: boolean; items: { id: string; prompt: string; order: number }[] },
): Promise<{ created_at: Date; items: QueueItemRow[] }> {
  const { rows } = await db.query<{ created_at: Date }>(
    'INSERT INTO follow_up_queues (id, task_attempt_id, auto_execute) VALUES ($1, $2, $3) RETURNING created_at',
    [q.id, q.attemptId, q.autoExecute],
  );
  const items: QueueItemRow[] = [];
  for (const it of q.items) {
    const r = await db.query<QueueItemRow>('INSERT INTO follow_up_queue_items (id, queue_id, prompt, "order") VALUES ($1, $2, $3, $4) RETURNING *', [
      it.id,
      q.id,
      it.prompt,
      it.order,
    ]);
    items.push(r.rows[0] as QueueItemRow);
  }
  return { created_at: (rows[0] as { created_at: Date }).created_at, items };
}

export async function setQueueItemStatus(db: Queryable, itemId: string, status: 'sent' | 'failed'): Promise<void> {
  await db.query(`UPDATE follow_up_queue_items SET status = $2, sent_at = CASE WHEN $2 = 'sent' THEN now() ELSE sent_at END WHERE id = $1`, [itemId, status]);
}

export async function listQueueItems(db: Queryable, queueId: string): Promise<QueueItemRow[]> {
  const { rows } = await db.query<QueueItemRow>('SELECT * FROM follow_up_queue_items WHERE queue_id = $1 ORDER BY "order", id', [queueId]);
  return rows;
}

export async function insertDraftQueue(
  db: Queryable,
  q: { id: string; attemptId: string; projectId: string; items: { id: string; title: string; description: string; order: number }[] },
): Promise<{ created_at: Date; items: DraftQueueItemRow[] }> {
  const { rows } = await db.query<{ created_at: Date }>(
    'INSERT INTO draft_queues (id, task_attempt_id, project_id) VALUES ($1, $2, $3) RETURNING created_at',
    [q.id, q.attemptId, q.projectId],
  );
  const items: DraftQueueItemRow[] = [];
  for (const it of q.items) {
    const r = await db.query<DraftQueueItemRow>(
      'INSERT INTO draft_queue_items (id, queue_id, title, description, "order") VALUES ($1, $2, $3, $4, $5) RETURNING *',
      [it.id, q.id, it.title, it.description, it.order],
    );
    items.push(r.rows[0] as DraftQueueItemRow);
  }
  return { created_at: (rows[0] as { created_at: Date }).created_at, items };
}
