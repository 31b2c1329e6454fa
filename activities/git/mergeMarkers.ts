/**
 * Merge markers: `refs/armada/merges/<attemptId>/<branch head>` points at the commit a merge of that attempt moves
 * its base branch to. mergeBranch writes it before the base moves, so a retried merge recognises its own result.
 */
import { git, gitOrThrow } from '../../lib/git';

/** The marker of a merge of `attemptId` at branch head `branchSha`: it points at the commit the base moves to. */
export const MERGE_MARKER_PREFIX = 'refs/armada/merges/';
export const markerRef = (attemptId: string, branchSha: string) => `${MERGE_MARKER_PREFIX}${attemptId}/${branchSha}`;

/** The commit an earlier try of this merge moved the base branch to, when the base still contains it. */
export async function earlierMerge(repo: string, base: string, attemptId: string, branchSha: string): Promise<string | null> {
  const marker = await git(repo, ['rev-parse', '--verify', '--quiet', `${markerRef(attemptId, branchSha)}^{commit}`]);
  if (marker.code !== 0) return null;
  const sha = marker.stdout.trim();
  return (await git(repo, ['merge-base', '--is-ancestor', sha, `refs/heads/${base}`])).code === 0 ? sha : null;
}

/** Removes the merge markers of an attempt (its branch is being deleted); throws with git's message when git refuses. */
export async function removeMergeMarkers(repo: string, attemptId: string): Promise<void> {
  const refs = await gitOrThrow(repo, ['for-each-ref', '--format=%(refname)', `${MERGE_MARKER_PREFIX}${attemptId}/`]);
  for (const ref of refs.split('\n').filter(Boolean)) await gitOrThrow(repo, ['update-ref', '-d', ref]);
}

