import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { checkPullRequest } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '2 minutes', maximumAttempts: 5 },
});

export interface PullRequestWatchInput {
  attemptId: string;
  pollIntervalMs: number;
}

/** Polls before continuing as new, so the history of a long-open pull request stays small. */
const POLLS_PER_RUN = 500;

/**
 * Watches an attempt's pull request (id `pr-watch:<attemptId>`) until it is merged (the activity completes the
 * task) or closed. A poll that keeps failing (host down, token revoked) is retried at the next interval.
 */
export async function pullRequestWatchWorkflow(input: PullRequestWatchInput): Promise<'merged' | 'closed' | 'gone'> {
  for (let i = 0; i < POLLS_PER_RUN; i++) {
    try {
      const state = await checkPullRequest({ attemptId: input.attemptId });
      if (state !== 'open') return state;
    } catch {
      // retries exhausted for this poll: try again next interval
    }
    await sleep(input.pollIntervalMs);
  }
  return continueAsNew<typeof pullRequestWatchWorkflow>(input);
}
