import fs from 'node:fs';
import path from 'node:path';
import { git, gitOrThrow, inspectLocalRepo } from '../../lib/git';
import { keepAlive } from '../keepAlive';

export interface CloneRepositoryInput {
  url: string;
  branch: string;
  dest: string;
}

/**
 * Clones `url` into `dest`. Idempotent: an existing clone of the same URL is kept; a partial one left by a crash
 * is removed, since the clone goes to a temp dir first and is renamed into place only when complete.
 */
export async function cloneRepository(input: CloneRepositoryInput): Promise<void> {
  const existing = await inspectLocalRepo(input.dest);
  if (existing.kind === 'worktree') {
    const origin = await git(input.dest, ['remote', 'get-url', 'origin']);
    if (origin.code === 0 && origin.stdout.trim() === input.url) return;
    throw new Error(`${input.dest} already holds a different repository`);
  }
  fs.mkdirSync(path.dirname(input.dest), { recursive: true });
  const tmp = `${input.dest}.partial`;
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    await keepAlive(() => cloneInto(input, tmp), { intervalMs: 5_000 });
    fs.renameSync(tmp, input.dest);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function cloneInto(input: CloneRepositoryInput, tmp: string): Promise<void> {
  const r = await git(path.dirname(input.dest), ['clone', '--branch', input.branch, '--', input.url, tmp], { timeoutMs: 30 * 60_000 });
  if (r.code !== 0) {
    // An empty remote or a missing branch: clone the default branch instead.
    fs.rmSync(tmp, { recursive: true, force: true });
    await gitOrThrow(path.dirname(input.dest), ['clone', '--', input.url, tmp], { timeoutMs: 30 * 60_000 });
  }
}
