/** The outcome of removing an attempt's worktree and branch (activities/git/removeWorktree.ts), as activities, workflows, rows and the API share it. */

/** Why a removal did not remove them: an error as the API shows one, saying what was kept and what to do. */
export interface CleanupError {
  /** REPOSITORY_LOCKED, WORKTREE_LOCKED or CLEANUP_FAILED */
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** What a removal did. (The activity before this returned nothing, and said nothing of what git refused.) */
export interface WorktreeRemoval {
  removed: boolean;
  /** Why not; null when removed. */
  error: CleanupError | null;
}
