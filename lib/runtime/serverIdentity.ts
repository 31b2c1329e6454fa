/**
 * Whether the process a pid file names is really this ARMADA_HOME's server. After a reboot or a pid wrap a stale pid
 * file names someone else's process; a name that merely contains `postgres` or `start-dev` is no proof, so only a
 * process whose command line names this home's file or directory is ever signalled.
 */
import fs from 'node:fs';
import path from 'node:path';
import { processAlive } from '../process/procStat';

/** The process's argv and working directory, or undefined when it is gone (or a zombie). */
function describe(pid: number): { argv: string[]; cwd?: string } | undefined {
  if (!processAlive(pid)) return undefined;
  try {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    let cwd: string | undefined;
    try {
      cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      /* another user's process */
    }
    return { argv, cwd };
  } catch {
    return undefined;
  }
}

/** The real path of `p` (resolved against `cwd` when relative), or the resolved path when it cannot be followed. */
function realPath(p: string, cwd = '/'): string {
  const resolved = path.resolve(cwd, p);
  try {
    return fs.realpathSync(resolved);
  } catch {
    return resolved;
  }
}

/** The value of `--flag VALUE` or `--flag=VALUE` (also `-D VALUE`) in argv. */
function optionValue(argv: string[], flag: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag) return argv[i + 1];
    if (argv[i].startsWith(`${flag}=`)) return argv[i].slice(flag.length + 1);
  }
  return undefined;
}

/** Pid `pid` is a running `temporal server start-dev` whose --db-filename is `dbFile`. */
export function isDevServerOf(pid: number, dbFile: string): boolean {
  const p = describe(pid);
  if (!p?.argv.includes('start-dev')) return false;
  const db = optionValue(p.argv, '--db-filename') ?? optionValue(p.argv, '-f');
  return db !== undefined && realPath(db, p.cwd) === realPath(dbFile);
}

/**
 * Pid `pid` is a running postgres (its program is named postgres) serving `dataDir`: named by `-D`, or, without one,
 * its working directory (a postmaster changes into its data directory).
 */
export function isPostmasterOf(pid: number, dataDir: string): boolean {
  const p = describe(pid);
  if (!p || path.basename(p.argv[0] ?? '') !== 'postgres') return false;
  try {
    if (path.basename(fs.readlinkSync(`/proc/${pid}/exe`)) !== 'postgres') return false;
  } catch {
    /* another user's process (the postgres system user's, when armada is not root): argv[0] has to do */
  }
  const d = optionValue(p.argv, '-D');
  if (d !== undefined) return realPath(d, p.cwd) === realPath(dataDir);
  return p.cwd !== undefined && realPath(p.cwd) === realPath(dataDir);
}

/** The pid of an initdb running on `dataDir` (another start initialising it), or undefined. */
export function initdbRunningOn(dataDir: string): number | undefined {
  for (const name of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    const p = describe(Number(name));
    if (!p || path.basename(p.argv[0] ?? '') !== 'initdb') continue;
    const d = optionValue(p.argv, '--pgdata') ?? optionValue(p.argv, '-D');
    if (d !== undefined && realPath(d, p.cwd) === realPath(dataDir)) return Number(name);
  }
  return undefined;
}
