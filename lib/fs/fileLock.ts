/**
 * An advisory lock beside a file, for a read-modify-write of it by several processes at once (two `armada tools config
 * add` runs): `<file>.lock`, created exclusively (O_EXCL) and holding its owner's pid, host and a token. A writer that
 * finds it waits, up to a limit; a lock whose owner is gone is taken over: on this host, when no process has its pid;
 * from another host (a shared home directory), when it is older than STALE_MS. Synchronous, like the edits it guards.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';

/** The file is locked by another process for longer than the wait allowed. */
export class FileLockTimeout extends Error {
  constructor(
    message: string,
    readonly lockFile: string,
  ) {
    super(message);
    this.name = 'FileLockTimeout';
  }
}

/** A lock this old is stale whoever holds it: the edits it guards take milliseconds. */
const STALE_MS = 30_000;
/** A lock file without a readable owner (its writer died between creating and writing it) is stale after this. */
const UNWRITTEN_STALE_MS = 2000;
const DEFAULT_WAIT_MS = 10_000;

interface Owner {
  pid: number;
  host: string;
  token: string;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function readOwner(lockFile: string): { text: string; owner?: Owner; ageMs: number } | undefined {
  try {
    const text = fs.readFileSync(lockFile, 'utf8');
    const ageMs = Date.now() - fs.statSync(lockFile).mtimeMs;
    try {
      const o = JSON.parse(text) as Partial<Owner>;
      if (typeof o.pid === 'number' && typeof o.host === 'string' && typeof o.token === 'string') return { text, owner: o as Owner, ageMs };
    } catch {
      // not written yet, or not ours
    }
    return { text, ageMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}

function isStale(found: { owner?: Owner; ageMs: number }): boolean {
  if (!found.owner) return found.ageMs > UNWRITTEN_STALE_MS;
  if (found.ageMs > STALE_MS) return true;
  return found.owner.host === os.hostname() && !processExists(found.owner.pid);
}

/**
 * Runs `fn` while holding `<file>.lock` (the file's directory must exist). Throws FileLockTimeout when another
 * process holds the lock for longer than `waitMs`.
 */
export function withFileLock<T>(file: string, fn: () => T, opts: { waitMs?: number } = {}): T {
  const lockFile = `${file}.lock`;
  const me: Owner = { pid: process.pid, host: os.hostname(), token: crypto.randomBytes(8).toString('hex') };
  const mine = JSON.stringify(me);
  const deadline = Date.now() + (opts.waitMs ?? DEFAULT_WAIT_MS);
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    let fd: number | undefined;
    try {
      fd = fs.openSync(lockFile, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (fd !== undefined) {
      try {
        fs.writeSync(fd, mine);
      } finally {
        fs.closeSync(fd);
      }
      break;
    }
    const found = readOwner(lockFile);
    if (!found) continue; // released meanwhile
    if (isStale(found)) {
      // taken over only if it is still the lock judged stale (another waiter may have taken it over already)
      if (readOwner(lockFile)?.text === found.text) fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() >= deadline) {
      const who = found.owner ? `process ${found.owner.pid} on ${found.owner.host}` : 'another process';
      throw new FileLockTimeout(`${file} is being changed by ${who} (lock file ${lockFile}); try again, or delete the lock file if that process is gone`, lockFile);
    }
    sleepSync(wait + Math.floor(Math.random() * wait));
  }
  try {
    return fn();
  } finally {
    if (readOwner(lockFile)?.text === mine) fs.rmSync(lockFile, { force: true });
  }
}
