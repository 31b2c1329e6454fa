/**
 * What a git command that talks to a project's remote needs: the environment that hands it the project's credentials
 * (lib/gitRemoteAuth.ts), opened from the project row here on the worker, so no workflow input carries them.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { getProjectRemote, type ProjectRemoteRow } from '../../lib/db/projects';
import type { Queryable } from '../../lib/db/pool';
import { gitRemoteAuthEnv } from '../../lib/gitRemoteAuth';
import { RepoCredentialsUnreadable, openRepoCredentials } from '../../lib/projects/repoCredentials';
import type { UrlCredentials } from '../../lib/urlCredentials';

export interface RemoteAuthDeps {
  db: Queryable;
  encryptionKey: () => Buffer;
}

/** The project's credentials for its remote; null when it has none (or no longer exists). */
export async function projectCredentials(deps: RemoteAuthDeps, projectId: string): Promise<UrlCredentials | null> {
  const row = await getProjectRemote(deps.db, projectId);
  return row ? rowCredentials(deps, row) : null;
}

/** The credentials of a project row, opened; a seal that cannot be opened fails the activity for good. */
export function rowCredentials(deps: RemoteAuthDeps, row: ProjectRemoteRow): UrlCredentials | null {
  try {
    return openRepoCredentials(deps.encryptionKey, row);
  } catch (err) {
    if (err instanceof RepoCredentialsUnreadable) throw ApplicationFailure.nonRetryable(err.message, err.name);
    throw err;
  }
}

/** The environment of one git command talking to `remoteUrl` with `credentials` (none without them). */
export const remoteAuthEnv = (remoteUrl: string, credentials: UrlCredentials | null): Record<string, string> =>
  credentials ? gitRemoteAuthEnv(remoteUrl, credentials) : {};
