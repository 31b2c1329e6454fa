/**
 * TEST ONLY: stands in for the attempt engine's `attempt:<id>` workflow, which is not on this branch. It accepts the
 * documented `followUp` signal ({prompt, draftId?, source?}) and records each one with the time it arrived, in
 * order; the query `followUps` returns them. Registered only by test workers (never in workflows/index.ts).
 */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';

export interface ReceivedFollowUp {
  prompt: string;
  draftId?: string;
  source?: string;
  receivedAt: number;
}

export const followUpSignal = defineSignal<[{ prompt: string; draftId?: string; source?: string }]>('followUp');
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
