/**
 * The temp dirs of scheduler scripts (docs/scheduler.md#tasks): each script runs in a fresh one, removed when the script
 * ends. A worker killed outright (kill -9, OOM, a host reboot does not count: /tmp is cleared then) leaves its dirs
 * behind, so each dir's name says which process made it, and a worker removes this host's dirs whose process is gone
 * when it starts and at each janitor pass (workers/worktreeJanitor.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../lib/logger';
import { ownIdentity, readProcStat } from '../../lib/process/procStat';

const PREFIX = 'armada-script-';
/** `armada-script-p<pid>_<start>_<random>`: the process that made it (its pid, and its start time since boot). */
const OWNED = /^armada-script-p(\d+)_(\d+)_[A-Za-z0-9]+$/;
/** The name before dirs said their owner. */
const LEGACY = /^armada-script-[A-Za-z0-9]{6}$/;
/** A legacy dir is stale once unchanged for longer than any script may run (its timeout is at most 24 h). */
export const LEGACY_STALE_MS = 25 * 3600_000;

/** A process's start time in clock ticks since boot (/proc/<pid>/stat, field 22); 0 where /proc does not tell. */
function startTime(pid: number): number {
  return readProcStat(pid)?.startTime || 0;
}

/** This process's part of its dirs' names. */
function ownerTag(): string {
  const { pid, startTime } = ownIdentity();
  return `p${pid}_${startTime}`;
}

/** Makes a script's temp dir (under the OS temp dir, named after this process). */
export function makeScriptDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `${PREFIX}${ownerTag()}_`));
}

/** Whether the process that made a dir still runs: the same pid, started at the same time (a reused pid is another). */
function ownerAlive(pid: number, start: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(pid);
  return start === 0 || now === 0 || now === start;
}

/**
 * Removes this host's script dirs whose process is gone (and legacy ones unchanged for LEGACY_STALE_MS), never one of
 * a live process, nor anything but a directory of this user. Returns the paths removed.
 */
export function pruneStaleScriptDirs(logger: Logger, dir = os.tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.startsWith(PREFIX));
  } catch (err) {
    logger.warn({ err: { message: (err as Error).message }, dir }, 'script dirs: could not list the temp dir');
    return removed;
  }
  for (const name of names) {
    const full = path.join(dir, name);
    try {
      const st = fs.lstatSync(full);
      if (!st.isDirectory() || (typeof process.getuid === 'function' && st.uid !== process.getuid())) continue;
      const owned = OWNED.exec(name);
      const stale = owned ? !ownerAlive(Number(owned[1]), Number(owned[2])) : LEGACY.test(name) && Date.now() - st.mtimeMs > LEGACY_STALE_MS;
      if (!stale) continue;
      fs.rmSync(full, { recursive: true, force: true });
      removed.push(full);
    } catch (err) {
      logger.warn({ err: { message: (err as Error).message }, dir: full }, 'script dirs: could not remove a stale one');
    }
  }
  if (removed.length) logger.info({ removed: removed.length }, 'removed the temp dirs of scheduler scripts whose worker is gone');
  return removed;
}
