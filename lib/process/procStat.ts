/**
 * /proc/<pid>/stat (proc(5)), read and parsed in one place (Linux; elsewhere every read is undefined). Its second
 * field, the command name, is in parentheses and may itself hold spaces and parentheses (a process may name itself
 * `a) b (c`), so the fields after it are counted from after the LAST `)`: split at the first `) `, such a name's rest
 * was read as the process's state, parent and the rest.
 */
import fs from 'node:fs';

/** The fields of /proc/<pid>/stat that armada reads. Times are in clock ticks (USER_HZ, 100 on Linux). */
export interface ProcStat {
  pid: number;
  /** the command name (at most 15 bytes), without its parentheses */
  comm: string;
  /** R, S, D, T, I, …; Z a zombie (exited, not yet reaped), X dead */
  state: string;
  ppid: number;
  /** the process group */
  pgrp: number;
  /** CPU time in user and in kernel mode */
  utime: number;
  stime: number;
  /** the same of its reaped children */
  cutime: number;
  cstime: number;
  /** when it started, since boot: with the pid it names one process (a pid is given again once free, a start time not) */
  startTime: number;
  /** resident set size, in pages */
  rssPages: number;
}

/** The fields of one /proc/<pid>/stat text, or undefined when it is not one. */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  // f[0] is field 3 (state): field n of proc(5) is f[n - 3]
  const f = text.slice(close + 2).split(' ');
  if (f.length < 22) return undefined;
  return {
    pid: Number(text.slice(0, open)),
    comm: text.slice(open + 1, close),
    state: f[0],
    ppid: Number(f[1]),
    pgrp: Number(f[2]),
    utime: Number(f[11]),
    stime: Number(f[12]),
    cutime: Number(f[13]),
    cstime: Number(f[14]),
    startTime: Number(f[19]),
    rssPages: Number(f[21]),
  };
}

/** Process `pid`'s stat (`self`: this process's), or undefined when it is gone or /proc cannot tell. */
export function readProcStat(pid: number | string): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return parseProcStat(text);
}

/** The stat of a live process: undefined also when it is a zombie or dead (a killed orphan stays one until reaped). */
export function liveProcStat(pid: number | string): ProcStat | undefined {
  const stat = readProcStat(pid);
  return stat && stat.state !== 'Z' && stat.state !== 'X' ? stat : undefined;
}

/** Whether process `pid` runs: it exists and is no zombie. */
export function processAlive(pid: number | string): boolean {
  return liveProcStat(pid) !== undefined;
}

let ownStart: number | undefined;

/**
 * This process's identity on the host: its pid, and its start time in clock ticks since boot (field 22; 0 where /proc
 * cannot tell), read once. A pid is given again once free, the pair is not, so what a process leaves behind for a later
 * one to clean up is marked with this: the owner of the commands it runs (`ownerMark`, lib/process/orphans.ts) and the
 * name of its scheduler scripts' temp dirs (activities/scheduler/scriptDirs.ts), each in its own format.
 */
export function ownIdentity(): { pid: number; startTime: number } {
  ownStart ??= readProcStat(process.pid)?.startTime || 0;
  return { pid: process.pid, startTime: ownStart };
}
