/** Samples a process group's resources from /proc: CPU % since the last sample, RSS bytes, bytes read+written. */
import fs from 'node:fs';
import { recentGroupMembers } from '../../lib/process/processGroup';
import { readProcStat } from '../../lib/process/procStat';

const CLK_TCK = 100;
const PAGE = 4096;
/** Group membership may be this old: one /proc pass serves every sampler of the worker (they sample every 2 s). */
const MEMBERS_MAX_AGE_MS = 1000;

export interface GroupSample {
  cpu: number;
  memory: number;
  diskIO: number;
  networkIO: number;
}

export function createGroupSampler(pgid: number) {
  let lastTicks = 0;
  let lastAt = Date.now();
  const seen = new Map<number, number>(); // pid → last ticks, so exited children do not make cpu negative
  return {
    sample(): GroupSample {
      let ticks = 0;
      let rss = 0;
      let io = 0;
      for (const pid of recentGroupMembers(pgid, MEMBERS_MAX_AGE_MS)) {
        const stat = readProcStat(pid); // undefined: exited
        if (stat) {
          seen.set(pid, stat.utime + stat.stime);
          rss += stat.rssPages * PAGE;
        }
        try {
          const text = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
          const r = /read_bytes: (\d+)/.exec(text);
          const w = /write_bytes: (\d+)/.exec(text);
          io += Number(r?.[1] ?? 0) + Number(w?.[1] ?? 0);
        } catch {
          /* not readable */
        }
      }
      for (const t of seen.values()) ticks += t;
      const now = Date.now();
      const cpu = now > lastAt ? Math.max(0, ((ticks - lastTicks) / CLK_TCK / ((now - lastAt) / 1000)) * 100) : 0;
      lastTicks = ticks;
      lastAt = now;
      // network traffic is not attributable to a process group from /proc without namespaces: reported as 0
      return { cpu: Math.round(cpu * 10) / 10, memory: rss, diskIO: io, networkIO: 0 };
    },
  };
}
