/**
 * Whether an attempt's branch holds any change of its own: what create-pr checks on the attempt's host before it
 * pushes (activities/git/pushBranch.ts). The board's rule (web/src/components/task/pullRequestRefusal.ts: the
 * attempt's filesChanged, git's diff of its base commit and its head) is the second case here, so what the board
 * disables the service refuses.
 */
import { git } from '../../lib/git';

/**
 * Why `ref` has no changes beyond the commit `base` ("no commit beyond …", "commits that together change nothing …"),
 * or null when it has. A base git cannot resolve (gone from the repository) is not judged: null.
 */
export async function noChangesBeyond(repoDir: string, base: string, ref: string): Promise<string | null> {
  const baseCommit = await git(repoDir, ['rev-parse', '--verify', '--quiet', `${base}^{commit}`]);
  if (baseCommit.code !== 0) return null;
  const sha = baseCommit.stdout.trim();
  const ahead = await git(repoDir, ['rev-list', '--count', `${sha}..${ref}`]);
  if (ahead.code !== 0) return null;
  if (Number(ahead.stdout.trim()) === 0) return `no commit beyond its base ${sha.slice(0, 12)}`;
  // `base...ref`: the diff from where the branch left the base, as the attempt's own statistics are
  const diff = await git(repoDir, ['diff', '--quiet', `${sha}...${ref}`]);
  if (diff.code === 0) return `commits that together change nothing since its base ${sha.slice(0, 12)}`;
  return null;
}
