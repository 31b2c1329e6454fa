/** Projection writes of the follow-up workflows: draft and queue item status, with draft_updated events. */
import { attemptProject, finishFollowUpDraft, followUpStored, publishDraftEvent, setQueueItemStatus } from '../lib/db/drafts';
import { withTransaction } from '../lib/db/pool';
import { followUpDraftView } from '../lib/drafts/views';
import type { ActivityDeps } from './index';

export function createFollowUpActivities(deps: Pick<ActivityDeps, 'db'>) {
  return {
    /**
     * Whether the draft or queue a follow-up workflow sends was stored: its workflow is started inside the inserting
     * transaction, before the COMMIT, so it waits for that transaction's end, and sends nothing for a row that never
     * committed (the API died, PostgreSQL restarted, the request was answered 503).
     */
    async followUpRecordStored(input: { kind: 'draft' | 'queue'; id: string }): Promise<boolean> {
      return withTransaction(deps.db, (c) => followUpStored(c, input.kind, input.id));
    },
    async finishFollowUpDraftRecord(input: { draftId: string; status: 'sent' | 'failed'; error: string | null }): Promise<void> {
      await withTransaction(deps.db, async (c) => {
        const row = await finishFollowUpDraft(c, input.draftId, input.status, input.error);
        if (!row) return; // already recorded by an earlier run of this activity
        const projectId = await attemptProject(c, row.task_attempt_id);
        if (projectId) await publishDraftEvent(c, projectId, row.task_attempt_id, { type: 'draft_updated', draft: followUpDraftView(row) });
      });
    },
    async recordQueueItemSent(input: { itemId: string }): Promise<void> {
      await setQueueItemStatus(deps.db, input.itemId, 'sent');
    },
    /** An item the attempt could not be sent (its workflow had ended). */
    async recordQueueItemFailed(input: { itemId: string }): Promise<void> {
      await setQueueItemStatus(deps.db, input.itemId, 'failed');
    },
  };
}
