import type { CleanupError } from './taskTypes';

/** What each refusal of the worktree's removal (activities/git/removeWorktree.ts) means, in a few words. */
const CAUSES: Record<string, string> = {
  REPOSITORY_LOCKED: 'a git lock file is in the way',
  WORKTREE_LOCKED: 'the worktree is locked',
  CLEANUP_FAILED: 'git refused',
};

/**
 * An attempt whose worktree and branch a merge's cleanup did not remove (`cleanupError`): says so on the attempt,
 * where the merge was done, with the service's message, which names what was kept and what to do (clear the lock,
 * then delete the attempt to remove them). The merge itself has landed.
 */
export function CleanupNote({ error }: { error: CleanupError }) {
  return (
    <div className="banner banner-warning cleanup-note" role="status" aria-label="Cleanup">
      <p>
        <strong>
          Merged, but the worktree and branch were not removed: {CAUSES[error.code] ?? 'git refused'}.
        </strong>{' '}
        {error.message}
      </p>
    </div>
  );
}
