/** Projection writes of the follow-up workflows: draft and queue item status, with draft_updated events. */
import { attemptProject, finishFollowUpDraft, publishDraftEvent, setQueueItemStatus } from '../lib/db/drafts';
import { withTransaction } from '../lib/db/pool';
import { followUpDraftView } from '../lib/drafts/views';
import type { ActivityDeps } from './index';

export function createFollowUpActivities(deps: Pick<ActivityDeps, 'db'>) {
  return {
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
