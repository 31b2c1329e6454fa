/**
 * The open-file limit (RLIMIT_NOFILE) a long-running armada process needs. Below it the process does not fail where
 * the limit is reached but later and obscurely: every thread of a worker (the workflow threads, the piscina pools)
 * needs descriptors for its own event loop, and with 64 `armada worker` aborted at its first workflow task with a
 * native assertion ("Failed to initialize uv loop."). Node has no getrlimit: the limit is read from /proc/self/limits.
 */
import fs from 'node:fs';
import { ConfigError } from '../config';

/**
 * The least soft limit `armada start` and `armada worker` accept: Linux's default soft limit, which a process at its
 * defaults stays well within (pools of 20 connections, a few dozen threads' loops and servers' sockets, three pipes per
 * running agent). A worker running hundreds of agents at once needs more: docs/operations.md#sizing says 4096.
 */
export const MIN_OPEN_FILES = 1024;

/** The soft and hard `Max open files` of `limitsText` (the text of /proc/<pid>/limits); Infinity for unlimited. */
export function parseOpenFileLimit(limitsText: string): { soft: number; hard: number } | undefined {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limitsText);
  if (!m) return undefined;
  const value = (v: string) => (v === 'unlimited' ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: value(m[1]), hard: value(m[2]) };
}

/** Throws ConfigError (one line: the limit, the minimum, how to raise it) when this process may open too few files. */
export function requireOpenFileLimit(command: string, min = MIN_OPEN_FILES): void {
  let limit: { soft: number; hard: number } | undefined;
  try {
    limit = parseOpenFileLimit(fs.readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return; // no /proc (not Linux): nothing to check against
  }
  if (!limit || limit.soft >= min) return;
  // Node raises its soft limit to the hard one at start, so this is the hard limit: `ulimit -n N` lowers both in a
  // shell, and only a new shell (or root) can raise the hard limit again
  throw new ConfigError(
    `the open-file limit is ${limit.soft}, below the ${min} \`armada ${command}\` needs: raise it with \`ulimit -n 4096\` in a new shell (above the hard limit: /etc/security/limits.conf, or LimitNOFILE=4096 in a systemd unit)`,
  );
}
