/**
 * Repository inspection in one helper process (workers/repoInspector.js), started on first use and restarted when
 * it dies. Every git spawn forks the calling process; from a large API process that costs tens of milliseconds of
 * blocked event loop per spawn (seconds for one discovery of a few dozen repositories), so the API hands the
 * directories to the small helper instead. At most `concurrency` inspections run in it at once.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { createSlots } from '../process/slots';
import type { DirectoryIdentity, GitRepositoryRecord } from './gitDiscovery';

export interface RepoInspector {
  /** inspectRepository in the helper: null when `dir` is no longer the directory the walk found (`found`). */
  inspect(dir: string, found: DirectoryIdentity): Promise<GitRepositoryRecord | null>;
  /** Stops the helper process (the owning plugin's onClose). */
  close(): Promise<void>;
}

/** `record` null: not the directory found any more; no `record` at all: the inspection failed (`error`). */
type Reply = { id: number; record?: GitRepositoryRecord | null; error?: string };

export function createRepoInspector(opts: { concurrency?: number } = {}): RepoInspector {
  const slots = createSlots(opts.concurrency ?? 4);
  const pending = new Map<number, { resolve(r: GitRepositoryRecord | null): void; reject(e: Error): void }>();
  let child: ChildProcess | undefined;
  let nextId = 1;
  let closed = false;

  const start = (): ChildProcess => {
    // only what git needs: no secrets of the API's environment reach the helper or git
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C', LC_ALL: 'C' };
    const c = fork(path.join(__dirname, '..', '..', 'workers', 'repoInspector.js'), [], { env, execArgv: [], stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    c.on('message', (m: Reply) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.record !== undefined) p.resolve(m.record);
      else p.reject(new Error(m.error ?? 'inspection failed'));
    });
    c.on('exit', () => {
      if (child === c) child = undefined;
      for (const p of pending.values()) p.reject(new Error('repository inspector exited'));
      pending.clear();
    });
    c.unref();
    c.channel?.unref();
    return c;
  };

  return {
    async inspect(dir, found) {
      if (closed) throw new Error('repository inspector is closed');
      const release = await slots.acquire();
      try {
        child ??= start();
        const id = nextId++;
        const c = child;
        return await new Promise<GitRepositoryRecord | null>((resolve, reject) => {
          pending.set(id, { resolve, reject });
          c.send({ id, dir, found }, (err) => {
            if (err && pending.delete(id)) reject(err);
          });
        });
      } finally {
        release();
      }
    },
    async close() {
      closed = true;
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
      });
    },
  };
}
