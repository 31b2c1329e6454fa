import { noChangesReason } from './mergeRefusal';
import { type Attempt, RUNNING_STATUSES } from './taskTypes';

/**
 * Why a pull request of this attempt cannot be opened, in the board's words, or null when it can. create-pr
 * (api/task/codehost.ts) pushes the attempt branch and asks the code host for a pull request of it: with no branch it
 * answers 409 attempt_has_no_branch; with the worktree and branch removed (a merge's cleanup) the push fails; and an
 * attempt that changed nothing (or was cancelled before its changes were committed) gets 409 no_changes before any
 * push. The service's rule for that (activities/git/branchChanges.ts) is no commit beyond the attempt's base commit,
 * or commits that together change nothing: the empty diff of base and head that filesChanged 0 records.
 * While the attempt runs, none of that is known yet (its worktree is being made, its changes are not committed nor
 * counted): it said "the attempt's worktree and branch were removed" at the start, and "made no changes" while the
 * diff beside it showed the agent's files; it says when, as Merge… does.
 */
export function pullRequestRefusal(attempt: Attempt): string | null {
  if (RUNNING_STATUSES.includes(attempt.status)) return 'Open a pull request once the attempt has finished.';
  if (!attempt.branch) return 'No pull request yet: the attempt has no branch.';
  if (!attempt.worktreePath) return 'No pull request to open: the attempt’s worktree and branch were removed.';
  if (attempt.filesChanged === 0) return `No pull request to open: ${noChangesReason(attempt)}`;
  return null;
}
