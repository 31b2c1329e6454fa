import { type Attempt, RUNNING_STATUSES } from './taskTypes';

/**
 * Why the task service would refuse to merge this attempt, in the board's words, or null when it may be merged: its
 * preconditions (lib/attempts/mergePreconditions.ts: finished, not merged, a branch that still exists) and the merge's
 * own "no_changes" outcome (api/task/attemptService.ts: an attempt that committed nothing, e.g. one cancelled before
 * its agent's changes were committed). A pending or rejected merge approval is the one refusal the screen cannot
 * know beforehand: the Merge dialog shows it as the gate.
 */
export function mergeRefusal(attempt: Attempt): string | null {
  if (RUNNING_STATUSES.includes(attempt.status)) return 'Merge once the attempt has finished.';
  if (attempt.merged) return 'Already merged.';
  if (!attempt.branch || !attempt.baseBranch) return 'Nothing to merge: the attempt has no branch.';
  // the view shows no worktree once the attempt's worktree and branch were removed (cleaned up)
  if (!attempt.worktreePath) return 'Nothing to merge: the attempt’s worktree and branch were removed.';
  if (attempt.filesChanged === 0) return `Nothing to merge: ${noChangesReason(attempt)}`;
  return null;
}

/**
 * Why an ended attempt has no changes, and what to do, as the screen says it (Merge…, Create PR…): a failed attempt
 * read "the attempt made no changes", as if it had done its work and found nothing to do.
 */
export function noChangesReason(attempt: Attempt): string {
  if (attempt.status === 'failed') return 'the attempt failed and left no changes. Its log says why; send a follow-up or start a new attempt.';
  if (attempt.status === 'cancelled') return 'the attempt was cancelled before it changed anything. Start a new attempt to go on.';
  return 'the attempt made no changes.';
}
