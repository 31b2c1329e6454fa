/**
 * Servers of an ARMADA_HOME (embedded PostgreSQL, Temporal dev server) left running by a killed armada are stopped by
 * the next start; one whose armada is still running is never touched. This tells the two apart by the server's parent.
 */
import fs from 'node:fs';
import { OperatorError } from '../errors';
import { readProcStat } from '../process/procStat';

/** A server of this ARMADA_HOME belongs to a running armada (a second `armada start` or `armada migrate`). */
export class ArmadaHomeInUse extends OperatorError {
  constructor(message: string) {
    super(message);
    this.name = 'ArmadaHomeInUse';
  }
}

/**
 * The live armada process that started server `pid` (its parent), or undefined when the server is an orphan: its
 * starter died (the parent is init, a subreaper, or anything but armada).
 */
export function liveArmadaOwner(pid: number): { pid: number; command: string } | undefined {
  const ppid = readProcStat(pid)?.ppid;
  if (ppid === undefined || !Number.isInteger(ppid) || ppid <= 1) return undefined;
  try {
    const command = fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return /\barmada\b/.test(command) ? { pid: ppid, command } : undefined;
  } catch {
    return undefined;
  }
}

/** Throws ArmadaHomeInUse when server `pid` (`what`, e.g. "the embedded PostgreSQL of /x/pg") has a live armada. */
export function refuseIfOwned(pid: number, what: string): void {
  const owner = liveArmadaOwner(pid);
  if (owner) {
    throw new ArmadaHomeInUse(`${what} is in use by a running armada (pid ${owner.pid}: ${owner.command}); stop it first, or set DATABASE_URL and TEMPORAL_ADDRESS to use its servers`);
  }
}
