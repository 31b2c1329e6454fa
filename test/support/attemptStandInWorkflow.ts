/**
 * TEST ONLY: stands in for attemptWorkflow (`attempt:<id>`) where a test wants to see the follow-ups the API sends
 * without running an agent (drafts.test.ts); followUpsE2E.test.ts drives the real attemptWorkflow. It takes the real
 * `followUp` signal (imported from workflows/attemptMessages.ts, so the two cannot drift) and records each one with
 * the time it arrived, in order; the query `followUps` returns them. Registered only by test workers (never in
 * workflows/index.ts).
 */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';
import { followUpSignal } from '../../workflows/attemptMessages';

export interface ReceivedFollowUp {
  prompt: string;
  draftId?: string;
  source?: string;
  receivedAt: number;
}

export const followUpsQuery = defineQuery<ReceivedFollowUp[]>('followUps');
export const finishSignal = defineSignal('finish');

export async function attemptStandInWorkflow(): Promise<ReceivedFollowUp[]> {
  const received: ReceivedFollowUp[] = [];
  let done = false;
  setHandler(followUpSignal, (m) => {
    received.push({ ...m, receivedAt: Date.now() });
  });
  setHandler(followUpsQuery, () => received);
  setHandler(finishSignal, () => {
    done = true;
  });
  await condition(() => done);
  return received;
}
