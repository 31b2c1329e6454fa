/** mergeWorkflow (`merge:<attemptId>`): merge the attempt branch on the host that holds it, record it, clean up on request. */
import { getExternalWorkflowHandle, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { MergeOutcome } from '../activities/git/mergeAttempt';
import type { CleanupError, WorktreeRemoval } from '../lib/attempts/cleanup';
import type { MergeStrategy } from '../lib/attempts/mergeStrategy';
import { closeAttemptSignal } from './attemptMessages';

export interface MergeWorkflowInput {
  attemptId: string;
  hostQueue: string;
  repoPath: string;
  baseBranch: string;
  branch: string;
  worktreePath: string | null;
  strategy: MergeStrategy;
  message: string;
  cleanup: boolean;
}

/**
 * cleanedUp: the worktree and branch were removed (asked with `cleanup`); cleanupError: why not, when git refused
 * (the merge has landed all the same).
 */
export type MergeWorkflowResult = MergeOutcome & { cleanedUp: boolean; cleanupError?: CleanupError | null; mergedAt?: string };

// as the attempt's projections: the merge is done in git by then, and its record retries until PostgreSQL is back
// (each try waits for it up to its timeout: activities/untilPostgresAnswers.ts), about 15 minutes in all
const projection = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 20 },
});

export async function mergeWorkflow(input: MergeWorkflowInput): Promise<MergeWorkflowResult> {
  const git = proxyActivities<Activities>({
    taskQueue: input.hostQueue,
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '15 seconds',
    scheduleToStartTimeout: '1 minute',
    retry: { initialInterval: '1s', maximumAttempts: 3 },
  });
  const outcome = await git.mergeBranch({ attemptId: input.attemptId, repoPath: input.repoPath, baseBranch: input.baseBranch, branch: input.branch, strategy: input.strategy, message: input.message });
  if (!outcome.ok) return { ...outcome, cleanedUp: false };
  const mergedAt = await projection.recordAttemptMergedActivity({ attemptId: input.attemptId, commitSha: outcome.commitSha, cleanup: input.cleanup });
  if (!input.cleanup) return { ...outcome, cleanedUp: false, mergedAt };
  const removal: WorktreeRemoval | undefined = await git.removeWorktree({
    attemptId: input.attemptId,
    repoPath: input.repoPath,
    worktreePath: input.worktreePath,
    branch: input.branch,
    deleteBranch: true,
  });
  try {
    await getExternalWorkflowHandle(`attempt:${input.attemptId}`).signal(closeAttemptSignal);
  } catch {
    // the attempt workflow has already closed
  }
  // a history of the activity before it answered with its outcome: it answered nothing and counted as removed
  return { ...outcome, cleanedUp: removal?.removed ?? true, cleanupError: removal?.error ?? null, mergedAt };
}

/**
 * removeAttemptWorkflow (`attempt-remove:<attemptId>`): remove an attempt's worktree, branch and merge markers on its
 * host (DELETE). `attemptId` names the markers; a run started before it was passed leaves them.
 */
export async function removeAttemptWorkflow(input: {
  hostQueue: string;
  repoPath: string;
  worktreePath: string | null;
  branch: string | null;
  attemptId?: string;
}): Promise<WorktreeRemoval | undefined> {
  // heartbeat 15 s as the merge's (removeWorktree beats every 2 s): a try lost with its worker (kill -9) is tried
  // again ~15 s later, not after the 2-minute start-to-close, which left the branch for that long (session 53)
  const git = proxyActivities<Activities>({
    taskQueue: input.hostQueue,
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '15 seconds',
    scheduleToStartTimeout: '1 minute',
    retry: { initialInterval: '1s', maximumAttempts: 3 },
  });
  // the row is going: the attempt names only the markers (an activity's input, so no command of a history changes)
  return await git.removeWorktree({
    attemptId: null,
    mergeMarkersOf: input.attemptId ?? null,
    repoPath: input.repoPath,
    worktreePath: input.worktreePath,
    branch: input.branch,
    deleteBranch: true,
  });
}
