/**
 * A project's remote for the worker-kill clone tests (projectCloneWorkerKill, projectCloneWorkerKillLauncherOff): a
 * bare repository behind a real git smart-HTTP server on loopback (gitHttpServer.ts) that asks for a user and
 * password, whose first pack request is held until `releaseFirst()`, so a worker can be killed with `git clone`
 * certainly under way (the refs read, `<id>.partial` made, the pack awaited). Later pack requests pass.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startGitHttpServer } from './gitHttpServer';
import { makeGitRepo } from './harness';

export interface HeldCloneRemote {
  /** The clone URL, with the user and password in it. */
  url: string;
  /** The remote's `main`. */
  remoteHead: string;
  /** How many pack requests came so far. */
  packRequests(): number;
  /** Lets the first pack request go on. */
  releaseFirst(): void;
  /** Releases, stops the server and removes its files. */
  close(): Promise<void>;
}

/** The remote, its `main` holding `files`; its files live in a temp dir named with `prefix`. */
export async function startHeldCloneRemote(prefix: string, files: Record<string, string>): Promise<HeldCloneRemote> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const bare = path.join(tmp, 'srv', 'acme', 'widgets.git');
  fs.mkdirSync(path.dirname(bare), { recursive: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  const seed = makeGitRepo(files);
  execFileSync('git', ['-C', seed, 'push', '-q', bare, 'main']);
  const remoteHead = execFileSync('git', ['-C', bare, 'rev-parse', 'main'], { encoding: 'utf8' }).trim();
  fs.rmSync(seed, { recursive: true, force: true });
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((r) => (releaseFirst = r));
  let packRequests = 0;
  const user = 'deploy';
  const secret = `s3cret-${crypto.randomBytes(6).toString('hex')}`;
  const server = await startGitHttpServer(path.join(tmp, 'srv'), user, secret, {
    beforeUploadPack: () => (++packRequests === 1 ? firstHeld : Promise.resolve()),
  });
  return {
    url: `${server.url.replace('http://', `http://${user}:${secret}@`)}/acme/widgets.git`,
    remoteHead,
    packRequests: () => packRequests,
    releaseFirst: () => releaseFirst(),
    async close() {
      releaseFirst();
      await server.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}
