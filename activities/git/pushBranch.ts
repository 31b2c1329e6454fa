/**
 * `git push origin <branch>` of an attempt (create-pr), run on the attempt's host, where its worktree and the
 * project repository are. Pushing the same branch head again is a no-op, so retries are safe. A push the remote
 * rejects (non-fast-forward, hooks) is not retried; anything else (remote unreachable, network) is.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { faultPoint, type Faults } from '../../lib/faults';
import { git, gitOrThrow } from '../../lib/git';
import { redactUrlCredentials } from '../../lib/urlCredentials';

export interface PushBranchInput {
  /** the attempt's worktree, else the project repository */
  repoDir: string;
  branch: string;
}

/** The first line of git's message, with any credentials in URLs redacted. */
export function pushErrorMessage(stderr: string): string {
  return redactUrlCredentials(stderr.trim().split('\n')[0] ?? '');
}

export async function pushBranch(deps: { faults?: Faults }, input: PushBranchInput): Promise<{ commit: string }> {
  const ref = `refs/heads/${input.branch}`;
  const commit = (await gitOrThrow(input.repoDir, ['rev-parse', '--verify', `${ref}^{commit}`])).trim();
  await faultPoint(deps.faults, 'pushBranch.beforePush', { ...input });
  const r = await git(input.repoDir, ['push', '--porcelain', 'origin', `${ref}:${ref}`], { timeoutMs: 120_000 });
  if (r.code !== 0) {
    const rejected = /\[rejected\]|\[remote rejected\]|^!\s/m.test(`${r.stdout}\n${r.stderr}`);
    const message = pushErrorMessage(r.stderr) || (rejected ? 'the remote rejected the push' : `git push exited with code ${r.code}`);
    if (rejected) throw ApplicationFailure.nonRetryable(message, 'PushRejected');
    throw ApplicationFailure.retryable(message, 'PushFailed');
  }
  return { commit };
}
