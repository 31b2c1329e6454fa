/**
 * The CPU priority of the process groups Armada starts for users' work (agents, setup scripts, scheduler scripts,
 * multi-agent tasks): below Armada's own processes, so a fleet of busy agents cannot starve the API, the worker,
 * PostgreSQL and Temporal that serve them (docs/operations.md#cpu-priority-of-agents-and-scripts).
 *
 * Two settings, because each group leader starts a session of its own (setsid, for its process group): on Linux with
 * autogroup (kernel.sched_autogroup_enabled, the default on most distributions) the scheduler shares CPU between
 * sessions first, so 50 agents would weigh as much as 50 Armadas whatever their own nice value; the session's
 * autogroup nice (/proc/<pid>/autogroup) lowers that weight. The process's own nice value (inherited by its
 * children) does the same where there is no autogroup. Only ever lowered: raising needs privileges.
 * workers/launcher.js applies the same two settings to the groups it starts (it is plain JS with no imports).
 */
import fs from 'node:fs';
import os from 'node:os';
import type { ArmadaConfig } from '../config';

/** The default nice value of users' process groups (0 = as Armada's own; 19 = the lowest). */
export const DEFAULT_GROUP_NICE = 19;

/** The nice value for users' process groups: `processes.nice` in config.json, else DEFAULT_GROUP_NICE. */
export function groupNice(config: Pick<ArmadaConfig, 'file'>): number {
  return config.file.processes?.nice ?? DEFAULT_GROUP_NICE;
}

/** Lowers a just-started group leader's priority (its nice value and its session's autogroup); best effort. */
export function lowerGroupPriority(pid: number | undefined, nice: number | undefined): void {
  if (!pid || !nice) return;
  try {
    os.setPriority(pid, nice);
  } catch {
    /* gone already, or not permitted */
  }
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    /* no autogroup (not Linux, or switched off) */
  }
}
