/**
 * Commands run to completion (`runProcess`: git, a `git clone` among them) that outlived the process that ran them.
 * The process launcher stops them when its parent is killed outright (lib/process/launcher.ts), but with
 * `ARMADA_LAUNCHER=off` they run as children of the worker itself, and a worker killed with -9 left them running: a
 * `git clone` went on into the `<id>.partial` directory that the retry of its activity removes and clones into
 * (docs/operations.md, "The process launcher"). So every such command is started with its owner in its environment
 * (OWNER_VARIABLE, `<pid>:<start time>`, which git's own children inherit), and a worker stops the commands whose
 * owner is gone when it starts and before a clone reuses its directory. The owner's start time (from /proc) tells a
 * dead owner whose pid was given to another process since from a live one: that process is no owner.
 */
import fs from 'node:fs';
import { liveProcStat, ownIdentity } from './procStat';

/** The variable naming the process that ran a command: `<pid>:<start time in clock ticks since boot>`. */
export const OWNER_VARIABLE = 'ARMADA_COMMAND_OWNER';

/** A live process's start time (field 22 of /proc/<pid>/stat), or undefined when it is gone or a zombie. */
export function processStartTime(pid: number): string | undefined {
  const stat = liveProcStat(pid);
  return stat && String(stat.startTime);
}

/** This process as an owner: `<pid>:<start time>` (`<pid>:0` where /proc cannot say). */
export function ownerMark(): string {
  const { pid, startTime } = ownIdentity();
  return `${pid}:${startTime}`;
}

/** Whether the owner `mark` names still runs: its pid is live and started when the mark says. */
function ownerRuns(mark: string): boolean {
  const [pid, start] = mark.split(':');
  if (!pid || !/^\d+$/.test(pid) || start === '0') return true; // nothing to tell it by: left alone
  return processStartTime(Number(pid)) === start;
}

/** The owner mark a process was started with, or undefined (none, gone, or another user's). */
function ownerOf(pid: string): string | undefined {
  let environ: string;
  try {
    environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return undefined;
  }
  const prefix = `${OWNER_VARIABLE}=`;
  for (const entry of environ.split('\0')) if (entry.startsWith(prefix)) return entry.slice(prefix.length);
  return undefined;
}

/** The live processes whose owner is gone, each with its start time (to tell it from a later process of its pid). */
export function orphanedCommands(): { pid: number; start: string }[] {
  const found: { pid: number; start: string }[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return found;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    const owner = ownerOf(e);
    if (owner === undefined || owner === ownerMark() || ownerRuns(owner)) continue;
    const start = processStartTime(Number(e));
    if (start !== undefined) found.push({ pid: Number(e), start });
  }
  return found;
}

/** Sends `signal` to each of `procs` that is still the process it was (same start time); those it was sent to. */
function signalEach(procs: { pid: number; start: string }[], signal: NodeJS.Signals): { pid: number; start: string }[] {
  return procs.filter((p) => {
    if (processStartTime(p.pid) !== p.start) return false;
    try {
      process.kill(p.pid, signal);
      return true;
    } catch {
      return false;
    }
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stops the commands whose owner is gone: SIGTERM (git removes its half-made directory and lock files), SIGKILL to
 * those still there after `graceMs`. Resolves with their pids once they are gone (or a further second has passed).
 * Each process is signalled on its own, never its group: a command run by a worker without the launcher shares the
 * worker's process group, which may hold the shell or a `tee` that started the worker.
 */
export async function stopOrphanedCommands(graceMs = 3000): Promise<number[]> {
  const orphans = orphanedCommands();
  if (!orphans.length) return [];
  let left = signalEach(orphans, 'SIGTERM');
  const gone = (ps: typeof left) => ps.filter((p) => processStartTime(p.pid) === p.start);
  for (const until = Date.now() + graceMs; left.length && Date.now() < until; left = gone(left)) await sleep(50);
  left = signalEach(gone(left), 'SIGKILL');
  for (const until = Date.now() + 1000; left.length && Date.now() < until; left = gone(left)) await sleep(20);
  return orphans.map((p) => p.pid);
}
