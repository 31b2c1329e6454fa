/**
 * Runs a child process in its own process group (detached), so stopping it stops everything it started:
 * SIGTERM to the group, then SIGKILL after a grace period. Output arrives line by line. Used by the agent runner,
 * scheduler scripts and multi-agent tasks.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { spawnGroupInLauncher } from './launcher';
import { readLines } from './lines';
import { liveProcStat, readProcStat } from './procStat';
import { lowerGroupPriority } from './priority';

export interface GroupProcessOptions {
  command: string;
  args?: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  stdin?: string;
  onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
  /** Aborting stops the group (SIGTERM, then SIGKILL after graceMs). */
  signal?: AbortSignal;
  graceMs?: number;
  /** Stops the group after this many ms; the result then has timedOut true. */
  timeoutMs?: number;
  /** Lowers the group's CPU priority to this nice value (lib/process/priority.ts); absent or 0 = as this process. */
  nice?: number;
  /**
   * What becomes of processes the leader left running in its group when it exits on its own: `end` (the default)
   * stops them as a stop does (SIGTERM, SIGKILL after the grace period) before `done` resolves, so a run's end means
   * its work stopped; `keep` leaves them (a setup script may start a service for the agent; the worktree's removal
   * ends those).
   */
  leftovers?: 'end' | 'keep';
}

export interface GroupProcessResult {
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** Set when the process could not be started (e.g. ENOENT). */
  spawnError?: string;
  /** Processes the leader left running in its group that were stopped after it exited (leftovers: 'end'). */
  leftoversEnded: number;
}

export interface GroupProcess {
  pid: number;
  /** Stops the whole group: SIGTERM, then SIGKILL after the grace period. Resolves when the leader exited. */
  stop(reason?: 'abort' | 'timeout'): Promise<void>;
  done: Promise<GroupProcessResult>;
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    /* already gone */
  }
}

/** Live (non-zombie) members of a process group, read from /proc (Linux). */
export function groupMembers(pgid: number): number[] {
  return scanGroups().get(pgid) ?? [];
}

/** Every live (non-zombie) process on the machine by process group: one pass over /proc. */
function scanGroups(): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return groups;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const stat = liveProcStat(e); // undefined: exited meanwhile, or a zombie
    if (!stat) continue;
    const list = groups.get(stat.pgrp);
    if (list) list.push(Number(e));
    else groups.set(stat.pgrp, [Number(e)]);
  }
  return groups;
}

let recentScan: { at: number; groups: Map<number, number[]> } | undefined;
/**
 * Members of a process group from a /proc pass at most `maxAgeMs` old, shared by all callers: for periodic samplers
 * (one pass serves every agent a worker runs, instead of one whole-/proc pass per agent per sample). Not for
 * decisions about whether a group is alive: those use groupMembers.
 */
export function recentGroupMembers(pgid: number, maxAgeMs: number): number[] {
  const now = Date.now();
  if (!recentScan || now - recentScan.at > maxAgeMs) recentScan = { at: now, groups: scanGroups() };
  return recentScan.groups.get(pgid) ?? [];
}

/** True while any process of the group is alive (zombies waiting to be reaped do not count). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  return fs.existsSync('/proc/self/stat') ? groupMembers(pgid).length > 0 : true;
}

/**
 * Whether a live process of group `pgid` was started with `name=value` in its environment (/proc/<pid>/environ; a
 * child inherits it). How a retry tells the group its lost run left from one that took over the recorded pid since:
 * a pid is free again once its process is gone, and reused after pid_max more starts (32768 on many hosts). A process
 * of another user cannot be read, and never matches.
 */
export function groupStartedWith(pgid: number, name: string, value: string): boolean {
  return groupMembers(pgid).some((pid) => startedWith(pid, name, value));
}

/** Whether process `pid` was started with `name=value` in its environment; false when it cannot be read (gone, another user's). */
function startedWith(pid: number | string, name: string, value: string): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`${name}=${value}`);
  } catch {
    return false;
  }
}

/** A started group leader as the supervision below needs it: from a local spawn or from the launcher. */
interface Leader {
  pid: number;
  stdout: NodeJS.ReadableStream | null;
  stderr: NodeJS.ReadableStream | null;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: string }>;
}

/** Starts the group here (a fork of this process); synchronous, with the pid known at once. */
export function startGroupProcess(opts: GroupProcessOptions): GroupProcess {
  const child = spawn(opts.command, opts.args ?? [], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    detached: true,
    // no input: /dev/null, not a closed pipe. Node's pipes are sockets, and bash reads ~/.bashrc when its stdin is one
    // (a shell "run by a remote shell daemon"), which no terminal run of the same script does (docs/security.md)
    stdio: [opts.stdin !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  lowerGroupPriority(child.pid, opts.nice);
  child.stdin?.on('error', () => undefined); // a process that never reads stdin
  if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: string }>((resolve) => {
    child.once('error', (err) => resolve({ code: null, signal: null, spawnError: err.message }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return supervise({ pid: child.pid ?? 0, stdout: child.stdout, stderr: child.stderr, exit }, opts);
}

/**
 * Starts the group from the process launcher (lib/process/launcher.ts), so this large process is not forked; the
 * same supervision as startGroupProcess (lines, stop, timeout). Resolves once the leader runs (or failed to start:
 * the result's spawnError). Falls back to startGroupProcess when the launcher is off or unavailable.
 */
export async function launchGroupProcess(opts: GroupProcessOptions): Promise<GroupProcess> {
  const launched = spawnGroupInLauncher({ command: opts.command, args: opts.args ?? [], cwd: opts.cwd, env: opts.env ?? process.env, stdin: opts.stdin, nice: opts.nice, graceMs: opts.graceMs });
  if (!launched) return startGroupProcess(opts);
  return supervise(await launched, opts);
}

function supervise(leader: Leader, opts: GroupProcessOptions): GroupProcess {
  const pid = leader.pid;
  let timedOut = false;
  let aborted = false;
  let exited = false;
  let killTimer: NodeJS.Timeout | undefined;
  let spawnError: string | undefined;

  const lineReaders: Promise<void>[] = [];
  for (const stream of ['stdout', 'stderr'] as const) {
    const s = leader[stream];
    if (!s) continue;
    lineReaders.push(readLines(s, (line) => opts.onLine?.(stream, line)));
  }

  const exit = leader.exit.then((r) => {
    exited = true;
    spawnError = r.spawnError;
    return { code: r.code, signal: r.signal };
  });
  exit.catch(() => {
    exited = true; // the launcher died under it (it killed the group): done rejects
  });

  const stop = async (reason: 'abort' | 'timeout' = 'abort') => {
    if (reason === 'timeout') timedOut = true;
    else aborted = true;
    if (!pid) return;
    signalGroup(pid, 'SIGTERM');
    if (!killTimer) {
      killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), opts.graceMs ?? 3000);
      killTimer.unref();
    }
    await exit.catch(() => undefined);
  };

  const onAbort = () => void stop('abort');
  if (opts.signal) {
    if (opts.signal.aborted) onAbort();
    else opts.signal.addEventListener('abort', onAbort, { once: true });
  }
  // setTimeout fires at once for delays past 2^31-1 ms (24.8 days): longer limits wait in steps
  const timeout = opts.timeoutMs ? longTimeout(() => void stop('timeout'), opts.timeoutMs) : undefined;

  const done = (async (): Promise<GroupProcessResult> => {
    const { code, signal } = await exit;
    // Output of a process whose leader exited may still be buffered: read it to the end (bounded by a short wait,
    // since a grandchild holding the pipe open would otherwise keep us here).
    await Promise.race([Promise.all(lineReaders), new Promise((r) => setTimeout(r, 2000).unref())]);
    if (timeout) clearTimeout(timeout.ref);
    opts.signal?.removeEventListener('abort', onAbort);
    // The leader is gone; make sure nothing it started outlives it when we were asked to stop.
    if ((aborted || timedOut) && pid) {
      signalGroup(pid, 'SIGKILL');
    }
    if (killTimer) clearTimeout(killTimer);
    // what it left running on its own (`cmd &`, a daemon that kept the group) stops with the run
    const leftoversEnded = pid && !aborted && !timedOut && !spawnError && opts.leftovers !== 'keep' ? await endGroup(pid, opts.graceMs ?? 3000) : 0;
    return { pid, code, signal, timedOut, aborted, spawnError, leftoversEnded };
  })();

  return { pid, stop: (r) => (exited ? Promise.resolve() : stop(r)), done };
}

/**
 * Stops what is left of a group whose leader exited: SIGTERM, then SIGKILL once `graceMs` passed with members still
 * alive. Returns how many members there were (0, at once, when none: the common case costs one signal).
 */
async function endGroup(pgid: number, graceMs: number): Promise<number> {
  try {
    process.kill(-pgid, 0);
  } catch {
    return 0; // no member left
  }
  const found = groupMembers(pgid).length;
  if (!found) return 0;
  const until = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (groupMembers(pgid).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  };
  signalGroup(pgid, 'SIGTERM');
  await until(graceMs);
  if (groupMembers(pgid).length) {
    signalGroup(pgid, 'SIGKILL');
    await until(1000); // a SIGKILL takes effect at the process's next scheduling, not at the call
  }
  return found;
}

/**
 * Kills (SIGKILL) every process whose working directory is `dir` or below it, with its process group: the agents a
 * lost worker left running in a worktree, found even when their pid was never recorded. With `startedWith`, only
 * the processes started with that variable in their environment (a run's ARMADA_PROCESS_ID, which its children
 * inherit), so a user's shell or editor in the directory, or another run's process, is left alone. Returns the pids
 * killed.
 */
export function killProcessesUnder(dir: string, opts: { startedWith?: { name: string; value: string } } = {}): number[] {
  const root = dir.endsWith('/') ? dir : `${dir}/`;
  const killed: number[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return killed;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    let cwd: string;
    try {
      cwd = fs.readlinkSync(`/proc/${e}/cwd`);
    } catch {
      continue;
    }
    if (cwd !== dir && !cwd.startsWith(root)) continue;
    if (opts.startedWith && !startedWith(e, opts.startedWith.name, opts.startedWith.value)) continue;
    const pid = Number(e);
    const pgid = readProcStat(e)?.pgrp; // undefined: exited
    if (pgid !== undefined && pgid > 1 && pgid !== process.pid) signalGroup(pgid, 'SIGKILL');
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* exited */
    }
    killed.push(pid);
  }
  return killed;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** setTimeout for any delay: one past MAX_TIMER_MS is waited in steps (Node would otherwise fire it after 1 ms). */
export function longTimeout(fn: () => void, ms: number): { ref: NodeJS.Timeout } {
  const handle = { ref: setTimeout(() => undefined, 0) };
  const due = Date.now() + ms;
  const arm = () => {
    const left = due - Date.now();
    handle.ref = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
  };
  clearTimeout(handle.ref);
  arm();
  return handle;
}
