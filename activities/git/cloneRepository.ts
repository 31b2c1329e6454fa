import fs from 'node:fs';
import path from 'node:path';
import { git, gitOrThrow, inspectLocalRepo } from '../../lib/git';
import { stopOrphanedCommands } from '../../lib/process/orphans';
import { redactSecrets } from '../../lib/secretText';
import { credentialSecrets, holdsUrlSecret, splitUrlCredentials } from '../../lib/urlCredentials';
import { keepAlive } from '../keepAlive';
import { projectCredentials, remoteAuthEnv, type RemoteAuthDeps } from './projectRemoteAuth';
import { scrubRemoteCredentials } from './scrubRemoteCredentials';

export interface CloneRepositoryInput {
  /** The project whose row holds the URL's credentials, sealed (docs/security.md, "Credentials in URLs"). */
  projectId?: string;
  /** What to clone: a URL without credentials, or a local bare repository (clones started before they were sealed held them here). */
  url: string;
  branch: string;
  dest: string;
}

/**
 * Clones `url` into `dest`, authenticating with the project's credentials, with the URL without them as the clone's
 * origin. Idempotent: an existing clone of the same URL is kept (its origin cleaned of credentials); a partial one
 * left by a crash is removed, since the clone goes to a temp dir first and is renamed into place only when complete.
 */
export async function cloneRepository(deps: RemoteAuthDeps, input: CloneRepositoryInput): Promise<void> {
  const remote = splitUrlCredentials(input.url);
  const existing = await inspectLocalRepo(input.dest);
  if (existing.kind === 'worktree') {
    const origin = await git(input.dest, ['remote', 'get-url', 'origin']);
    if (origin.code === 0 && splitUrlCredentials(origin.stdout.trim()).url === remote.url) {
      await scrubRemoteCredentials(input.dest);
      return;
    }
    throw new Error(`${input.dest} already holds a different repository`);
  }
  const credentials = (input.projectId ? await projectCredentials(deps, input.projectId) : null) ?? (holdsUrlSecret(input.url) ? remote.credentials : null);
  fs.mkdirSync(path.dirname(input.dest), { recursive: true });
  const tmp = `${input.dest}.partial`;
  // a clone of a try whose worker was killed may still run here, bound for `tmp` (ARMADA_LAUNCHER=off, or its launcher
  // killed with it): stopped before the directory is removed and cloned into again
  await stopOrphanedCommands();
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    await keepAlive(() => cloneInto(remote.url, input.branch, tmp, remoteAuthEnv(remote.url, credentials)), { intervalMs: 5_000 });
    fs.renameSync(tmp, input.dest);
  } catch (err) {
    // git prints what a refusing remote answers (`remote: …`), which may quote the credentials it was sent
    throw withoutSecrets(err, credentialSecrets(credentials));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** `err` with `secrets` (in any form, lib/secretText.ts) taken out of its message and stack, as `***`. */
export function withoutSecrets(err: unknown, secrets: string[]): unknown {
  if (!(err instanceof Error) || secrets.length === 0) return err;
  err.message = redactSecrets(err.message, secrets, '***');
  if (err.stack) err.stack = redactSecrets(err.stack, secrets, '***');
  return err;
}

async function cloneInto(url: string, branch: string, tmp: string, env: Record<string, string>): Promise<void> {
  const cwd = path.dirname(tmp);
  const r = await git(cwd, ['clone', '--branch', branch, '--', url, tmp], { timeoutMs: 30 * 60_000, env });
  if (r.code !== 0) {
    // An empty remote or a missing branch: clone the default branch instead.
    fs.rmSync(tmp, { recursive: true, force: true });
    await gitOrThrow(cwd, ['clone', '--', url, tmp], { timeoutMs: 30 * 60_000, env });
  }
}
