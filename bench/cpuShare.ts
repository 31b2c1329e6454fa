/**
 * CPU seconds spent per program on the whole machine between two snapshots (Linux /proc), to say where a
 * benchmark's time goes: temporal (the dev server), postgres, this process (`bench`: node, running the services
 * under test), its reaped children (`benchChildren`: the agent processes), its helper processes with theirs
 * (`benchHelpers`: the process launcher and the git it ran) and everything else (`other`).
 */
import fs from 'node:fs';

const TICK = 100; // USER_HZ on Linux

type Snapshot = { at: number; byPid: Map<string, { comm: string; cpu: number; reaped: number; mine: boolean }>; self: number; children: number };

function read(): Snapshot {
  const byPid = new Map<string, { comm: string; cpu: number; reaped: number; mine: boolean }>();
  let self = 0;
  let children = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    const cpu = (Number(f[11]) + Number(f[12])) / TICK; // utime + stime
    if (Number(pid) === process.pid) {
      self = cpu;
      children = (Number(f[13]) + Number(f[14])) / TICK; // cutime + cstime
      continue;
    }
    const reaped = (Number(f[13]) + Number(f[14])) / TICK;
    byPid.set(pid, { comm: comm.startsWith('postgres') ? 'postgres' : comm, cpu, reaped, mine: Number(f[1]) === process.pid });
  }
  return { at: Date.now(), byPid, self, children };
}

/** Starts a measurement; the returned function gives CPU seconds per program since then. */
export function cpuShare(): () => Record<string, number> {
  const a = read();
  return () => {
    const b = read();
    const out: Record<string, number> = { wallSeconds: (b.at - a.at) / 1000, bench: b.self - a.self, benchChildren: b.children - a.children, temporal: 0, postgres: 0, other: 0 };
    for (const [pid, p] of b.byPid) {
      const before = a.byPid.get(pid);
      const d = p.cpu - (before?.cpu ?? 0);
      // a node helper of this process (the launcher, a CPU pool) counts with its reaped children (the git it ran);
      // `armada infra` is one too, but its children (temporal, postgres) are counted below while they run
      if (p.mine && p.comm !== 'temporal' && p.comm !== 'postgres') {
        out.benchHelpers = (out.benchHelpers ?? 0) + Math.max(0, d) + Math.max(0, p.reaped - (before?.reaped ?? 0));
        continue;
      }
      if (d <= 0) continue;
      const k = p.comm === 'temporal' || p.comm === 'postgres' ? p.comm : 'other';
      out[k] = (out[k] as number) + d;
    }
    for (const k of Object.keys(out)) out[k] = Number((out[k] as number).toFixed(2));
    return out;
  };
}
