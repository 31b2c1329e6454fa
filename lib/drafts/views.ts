/** API views of draft rows (also the `draft` field of draft_created / draft_updated stream messages). */
import type { DraftQueueItemRow, DraftRow, FollowUpDraftRow, QueueItemRow, RetryDraftRow } from '../db/drafts';

export const draftView = (d: DraftRow) => ({
  id: d.id,
  taskAttemptId: d.task_attempt_id,
  content: d.content,
  type: d.type,
  metadata: d.metadata,
  createdAt: d.created_at.toISOString(),
  updatedAt: d.updated_at.toISOString(),
});

export const followUpDraftView = (d: FollowUpDraftRow) => ({
  id: d.id,
  taskAttemptId: d.task_attempt_id,
  type: 'follow_up' as const,
  prompt: d.prompt,
  autoSend: d.auto_send,
  sendAfter: d.send_after?.toISOString() ?? null,
  status: d.status,
  error: d.error,
  createdAt: d.created_at.toISOString(),
  sentAt: d.sent_at?.toISOString() ?? null,
});

export const retryDraftView = (d: RetryDraftRow) => ({
  id: d.id,
  taskAttemptId: d.task_attempt_id,
  type: 'retry' as const,
  originalPrompt: d.original_prompt,
  retryPrompt: d.retry_prompt,
  retryReason: d.retry_reason,
  createdAt: d.created_at.toISOString(),
});

export const queueItemView = (i: QueueItemRow) => ({ id: i.id, prompt: i.prompt, order: i.order, status: i.status });
export const draftQueueItemView = (i: DraftQueueItemRow) => ({ id: i.id, title: i.title, description: i.description, order: i.order, status: i.status });
