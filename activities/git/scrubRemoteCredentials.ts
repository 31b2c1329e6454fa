/**
 * Takes the credentials out of a repository's remote URLs (`remote.<name>.url` and `.pushurl` in .git/config, which
 * every agent working in the repository can read): each becomes the URL without its userinfo. Managed clones made
 * before credentials were sealed have their origin so (docs/security.md, "Credentials in URLs"); the credentials stay
 * sealed in the project row, and the git commands that talk to the remote get them from there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { namesIn } from '../../lib/fs/namesIn';
import { git, gitOrThrow } from '../../lib/git';
import { isUuid } from '../../lib/ids';
import type { Logger } from '../../lib/logger';
import { managedClonesDir } from '../../lib/projects/managedClones';
import { holdsUrlSecret, splitUrlCredentials } from '../../lib/urlCredentials';

/** The keys whose values were rewritten (none when no remote URL held credentials). */
export async function scrubRemoteCredentials(repoDir: string): Promise<string[]> {
  const listed = await git(repoDir, ['config', '--local', '--get-regexp', '^remote\\..*\\.(url|pushurl)$'], { timeoutMs: 10_000 });
  if (listed.code !== 0) return []; // 1: no remote URL at all
  const values = new Map<string, string[]>();
  for (const line of listed.stdout.split('\n')) {
    const space = line.indexOf(' ');
    if (space <= 0) continue;
    const key = line.slice(0, space);
    values.set(key, [...(values.get(key) ?? []), line.slice(space + 1)]);
  }
  const scrubbed: string[] = [];
  for (const [key, urls] of values) {
    if (!urls.some(holdsUrlSecret)) continue;
    const clean = urls.map((url) => (holdsUrlSecret(url) ? splitUrlCredentials(url).url : url));
    // one value (the usual case): one atomic rewrite of the file; several: each again, in order
    await gitOrThrow(repoDir, ['config', '--local', '--replace-all', key, clean[0] as string], { timeoutMs: 10_000 });
    for (const url of clean.slice(1)) await gitOrThrow(repoDir, ['config', '--local', '--add', key, url], { timeoutMs: 10_000 });
    scrubbed.push(key);
  }
  return scrubbed;
}

/**
 * Cleans the remote URLs of every managed clone under $ARMADA_HOME/repos (those made before credentials were sealed),
 * at a worker's start; a clone that fails is logged and skipped (its next push cleans it too).
 */
export async function scrubManagedClones(home: string, logger: Logger): Promise<void> {
  const root = managedClonesDir(home);
  for (const name of namesIn(root)) {
    if (!isUuid(name)) continue; // a clone is named after its project; `.partial` and removal claims are not clones
    const dir = path.join(root, name);
    if (!fs.existsSync(path.join(dir, '.git'))) continue;
    try {
      const keys = await scrubRemoteCredentials(dir);
      if (keys.length) logger.info({ clone: dir, keys }, 'removed credentials from the remote URLs of a managed clone');
    } catch (err) {
      logger.warn({ clone: dir, err: { message: (err as Error).message } }, 'could not remove credentials from the remote URLs of a managed clone');
    }
  }
}
