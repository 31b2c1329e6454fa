/**
 * `git push origin <branch>` of an attempt (create-pr), run on the attempt's host, where its worktree and the
 * project repository are. Pushing the same branch head again is a no-op, so retries are safe. A push the remote
 * rejects (non-fast-forward, hooks) is not retried; anything else (remote unreachable, network) is.
 * A branch with no changes beyond the attempt's base is not pushed: `NoChanges`, not retried (create-pr's 409
 * no_changes), since the code host would refuse its pull request only after the push.
 * To a managed clone's origin, the push authenticates with the project's sealed credentials, and the origin is first
 * cleaned of credentials an older Armada left in it (docs/security.md, "Credentials in URLs").
 */
import { ApplicationFailure } from '@temporalio/activity';
import { faultPoint, type Faults } from '../../lib/faults';
import { git, gitOrThrow } from '../../lib/git';
import { getProjectRemote } from '../../lib/db/projects';
import { hasManagedClone } from '../../lib/projects/managedClones';
import { noChangesBeyond } from './branchChanges';
import { redactSecrets } from '../../lib/secretText';
import { credentialSecrets, redactUrlCredentials, splitUrlCredentials } from '../../lib/urlCredentials';
import { remoteAuthEnv, rowCredentials, type RemoteAuthDeps } from './projectRemoteAuth';
import { scrubRemoteCredentials } from './scrubRemoteCredentials';

export interface PushBranchInput {
  /** the attempt's worktree, else the project repository */
  repoDir: string;
  branch: string;
  /** The attempt's project (pushes started before credentials were sealed have none: origin's URL is used as it is). */
  projectId?: string;
  /**
   * The attempt's base commit: a branch without changes beyond it is not pushed. Absent (pushes started before this
   * was checked, an attempt without a recorded base): pushed as it is.
   */
  base?: string;
}

/** The first line of git's message, with any credentials in URLs redacted. */
export function pushErrorMessage(stderr: string): string {
  return redactUrlCredentials(stderr.trim().split('\n')[0] ?? '');
}

export async function pushBranch(deps: { faults?: Faults; config: { home: string } } & RemoteAuthDeps, input: PushBranchInput): Promise<{ commit: string }> {
  const ref = `refs/heads/${input.branch}`;
  const commit = (await gitOrThrow(input.repoDir, ['rev-parse', '--verify', `${ref}^{commit}`])).trim();
  const unchanged = input.base ? await noChangesBeyond(input.repoDir, input.base, ref) : null;
  if (unchanged) throw ApplicationFailure.nonRetryable(`${input.branch} has ${unchanged}`, 'NoChanges');
  const { env, secrets } = await originAuthEnv(deps, input);
  await faultPoint(deps.faults, 'pushBranch.beforePush', { ...input });
  const r = await git(input.repoDir, ['push', '--porcelain', 'origin', `${ref}:${ref}`], { timeoutMs: 120_000, env });
  if (r.code !== 0) {
    const rejected = /\[rejected\]|\[remote rejected\]|^!\s/m.test(`${r.stdout}\n${r.stderr}`);
    // a refusing remote's answer (`remote: …`) may quote the credentials it was sent
    const message = redactSecrets(pushErrorMessage(r.stderr), secrets, '***') || (rejected ? 'the remote rejected the push' : `git push exited with code ${r.code}`);
    if (rejected) throw ApplicationFailure.nonRetryable(message, 'PushRejected');
    throw ApplicationFailure.retryable(message, 'PushFailed');
  }
  return { commit };
}

/**
 * The environment that authenticates the push to the origin of a project's managed clone (its origin cleaned of
 * credentials first), for the project's URL only: an origin an agent pointed elsewhere is not sent them. None for a
 * repository of the user's, whose remotes and credential helpers are the user's.
 */
async function originAuthEnv(deps: { config: { home: string } } & RemoteAuthDeps, input: PushBranchInput): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const none = { env: {}, secrets: [] };
  if (!input.projectId) return none;
  const project = await getProjectRemote(deps.db, input.projectId);
  if (!project || !hasManagedClone(project, deps.config.home)) return none;
  await scrubRemoteCredentials(input.repoDir);
  const credentials = rowCredentials(deps, project);
  return { env: remoteAuthEnv(splitUrlCredentials(project.repo_url).url, credentials), secrets: credentialSecrets(credentials) };
}
