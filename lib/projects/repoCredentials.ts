/**
 * The credentials of a project's repository URL (`https://user:secret@host/…`; docs/security.md, "Credentials in
 * URLs"): sealed with the encryption key in the project row (`repo_credentials_sealed`), next to the URL as shown
 * (`https://user:***@host/…`). They are opened only by the worker, for the one git command that talks to the remote
 * (lib/gitRemoteAuth.ts); git is given the URL without userinfo, so no .git/config, workflow input or log holds them.
 */
import { listUnsealedRepoUrls, sealRepoUrl, type ProjectRemoteRow } from '../db/projects';
import type { Queryable } from '../db/pool';
import type { Logger } from '../logger';
import { openSecret, sealSecret } from '../secretBox';
import { holdsUrlSecret, redactUrlCredentials, splitUrlCredentials, type UrlCredentials } from '../urlCredentials';

/** What a project row stores of a repository URL as given: the URL as shown, and its credentials sealed (or null). */
export function storedRepoUrl(key: Buffer, given: string): { repoUrl: string; credentialsSealed: string | null } {
  const { credentials } = splitUrlCredentials(given);
  if (!credentials || !holdsUrlSecret(given)) return { repoUrl: given, credentialsSealed: null };
  return { repoUrl: redactUrlCredentials(given), credentialsSealed: sealSecret(key, JSON.stringify(credentials)) };
}

export class RepoCredentialsUnreadable extends Error {
  constructor(projectId: string) {
    super(`The credentials of project ${projectId}'s repository URL cannot be opened: they were sealed with another encryption key (ARMADA_ENCRYPTION_KEY); recreate the project with its URL`);
    this.name = 'RepoCredentialsUnreadable';
  }
}

/**
 * The credentials git sends to a project's remote: opened from the row, or, in a row written before they were
 * sealed (until the task service's next start seals it), taken from its URL. Null when the URL has none.
 */
export function openRepoCredentials(key: () => Buffer, row: Pick<ProjectRemoteRow, 'id' | 'repo_url' | 'repo_credentials_sealed'>): UrlCredentials | null {
  if (row.repo_credentials_sealed) {
    let opened: string;
    try {
      opened = openSecret(key(), row.repo_credentials_sealed);
    } catch {
      throw new RepoCredentialsUnreadable(row.id);
    }
    const c = JSON.parse(opened) as UrlCredentials;
    return { username: String(c.username ?? ''), password: String(c.password ?? '') };
  }
  return holdsUrlSecret(row.repo_url) ? splitUrlCredentials(row.repo_url).credentials : null;
}

/**
 * Seals the rows that still hold a repository URL as given (written before migration 099: SQL cannot see the key),
 * and redacts their clone error (git's messages quoted the URL). Run by the task service at start; several replicas
 * may run it at once (each row is updated only while it still holds the URL as given).
 */
export async function sealStoredRepoUrls(db: Queryable, key: Buffer, logger: Logger): Promise<number> {
  let sealed = 0;
  for (const row of await listUnsealedRepoUrls(db)) {
    if (!holdsUrlSecret(row.repo_url)) continue;
    const stored = storedRepoUrl(key, row.repo_url);
    if (!stored.credentialsSealed) continue;
    const cloneError = row.clone_error === null ? null : redactUrlCredentials(row.clone_error);
    if (await sealRepoUrl(db, row.id, row.repo_url, stored.repoUrl, stored.credentialsSealed, cloneError)) sealed++;
  }
  if (sealed) logger.info({ projects: sealed }, 'sealed the credentials of repository URLs stored before they were sealed');
  return sealed;
}
