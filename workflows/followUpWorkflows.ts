/**
 * Follow-ups sent to a running attempt: a follow-up draft with autoSend waits (durably) until sendAfter, then
 * signals the attempt; an auto-executed queue signals its prompts in order. The attempt workflow (`attempt:<id>`)
 * queues follow-ups FIFO and runs each as a new agent process, so signalling in order is executing in order.
 *
 * Both are started by the API inside the transaction that inserts their row, before its COMMIT. They first wait for
 * that transaction's end and send nothing when the row was not stored (`follow-up-waits-for-row`): a COMMIT that
 * failed (a 503) or never came (the API killed) sent the prompt all the same, and a prompt sent before the COMMIT
 * had its row left `scheduled` or `pending`, the activity's update having found no row yet.
 */
import { getExternalWorkflowHandle, patched, proxyActivities, sleep } from '@temporalio/workflow';
import { attemptWorkflowId, followUpSignal } from './attemptMessages';
import type { Activities } from '../activities';

const { followUpRecordStored, finishFollowUpDraftRecord, recordQueueItemSent, recordQueueItemFailed } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

export interface FollowUpDraftInput {
  draftId: string;
  attemptId: string;
  prompt: string;
  /** ISO time; null = now */
  sendAfter: string | null;
}

/** Whether the row a follow-up workflow sends was stored (always true for a run started before the patch). */
async function stored(kind: 'draft' | 'queue', id: string): Promise<boolean> {
  return !patched('follow-up-waits-for-row') || (await followUpRecordStored({ kind, id }));
}

/** `follow-up:<draftId>`: sleep until sendAfter, signal the attempt, mark the draft sent (or failed). */
export async function followUpDraftWorkflow(input: FollowUpDraftInput): Promise<'sent' | 'failed' | 'not-stored'> {
  if (!(await stored('draft', input.draftId))) return 'not-stored';
  if (input.sendAfter) {
    const wait = Date.parse(input.sendAfter) - Date.now();
    if (wait > 0) await sleep(wait);
  }
  try {
    await getExternalWorkflowHandle(attemptWorkflowId(input.attemptId)).signal(followUpSignal, {
      prompt: input.prompt,
      draftId: input.draftId,
      source: 'follow-up-draft',
    });
  } catch (err) {
    // the attempt workflow is gone (finished or never started): the draft cannot be delivered
    await finishFollowUpDraftRecord({ draftId: input.draftId, status: 'failed', error: err instanceof Error ? err.message : String(err) });
    return 'failed';
  }
  await finishFollowUpDraftRecord({ draftId: input.draftId, status: 'sent', error: null });
  return 'sent';
}

export interface FollowUpQueueInput {
  queueId: string;
  attemptId: string;
  /** already sorted by order */
  items: { id: string; prompt: string; order: number }[];
}

/**
 * `follow-up-queue:<queueId>`: signals every prompt in order; the attempt runs them one after another. When the
 * attempt workflow is gone (it ended while the queue was being sent), the items not delivered are marked `failed`,
 * as a follow-up draft is; before, the queue's workflow failed and its items stayed `pending`.
 */
export async function followUpQueueWorkflow(input: FollowUpQueueInput): Promise<{ sent: number; failed?: number; notStored?: true }> {
  if (!(await stored('queue', input.queueId))) return { sent: 0, notStored: true };
  const attempt = getExternalWorkflowHandle(attemptWorkflowId(input.attemptId));
  let sent = 0;
  for (const item of input.items) {
    try {
      await attempt.signal(followUpSignal, { prompt: item.prompt, draftId: item.id, source: 'follow-up-queue' });
    } catch {
      const left = input.items.slice(sent);
      for (const rest of left) await recordQueueItemFailed({ itemId: rest.id });
      return { sent, failed: left.length };
    }
    await recordQueueItemSent({ itemId: item.id });
    sent++;
  }
  return { sent };
}
