/**
 * CPU seconds spent per program on the whole machine between two snapshots (Linux /proc), to say where a
 * benchmark's time goes: temporal (the dev server), postgres, this process (`bench`: node, running the services
 * under test), its reaped children (`benchChildren`: the agent processes), its helper processes with theirs
 * (`benchHelpers`: the process launcher and the git and agents it ran), and everything else on the machine
 * (`other`: not this benchmark's, e.g. another run's servers).
 */
import fs from 'node:fs';
import { readProcStat } from '../lib/process/procStat';

const TICK = 100; // USER_HZ on Linux

type Proc = { comm: string; cpu: number; reaped: number; ppid: number };
type Snapshot = { at: number; byPid: Map<string, Proc>; self: number; children: number };

function read(): Snapshot {
  const byPid = new Map<string, Proc>();
  let self = 0;
  let children = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const s = readProcStat(pid);
    if (!s) continue;
    const cpu = (s.utime + s.stime) / TICK;
    const reaped = (s.cutime + s.cstime) / TICK;
    if (Number(pid) === process.pid) {
      self = cpu;
      children = reaped;
      continue;
    }
    byPid.set(pid, { comm: s.comm.startsWith('postgres') ? 'postgres' : s.comm, cpu, reaped, ppid: s.ppid });
  }
  return { at: Date.now(), byPid, self, children };
}

/** Starts a measurement; the returned function gives CPU seconds per program since then. */
export function cpuShare(): () => Record<string, number> {
  const a = read();
  return () => {
    const b = read();
    const out: Record<string, number> = { wallSeconds: (b.at - a.at) / 1000, bench: b.self - a.self, benchChildren: b.children - a.children, temporal: 0, postgres: 0, other: 0 };
    // only this process's descendants count (other benchmarks or test suites on the machine run their own servers)
    const isDescendant = (pid: number): boolean => {
      for (let p = b.byPid.get(String(pid)), hops = 0; p && hops < 20; p = b.byPid.get(String(p.ppid)), hops++) if (p.ppid === process.pid) return true;
      return false;
    };
    for (const [pid, p] of b.byPid) {
      if (!isDescendant(Number(pid))) {
        const d = p.cpu - (a.byPid.get(pid)?.cpu ?? 0);
        if (d > 0) out.other = (out.other as number) + d;
        continue;
      }
      const before = a.byPid.get(pid);
      const d = p.cpu - (before?.cpu ?? 0);
      // a node helper of this process (the launcher, a CPU pool) counts with its reaped children (the git and
      // agents it ran); `armada infra` is one too, but its children (temporal, postgres) are counted while they run
      if (p.ppid === process.pid && p.comm !== 'temporal' && p.comm !== 'postgres') {
        out.benchHelpers = (out.benchHelpers ?? 0) + Math.max(0, d) + Math.max(0, p.reaped - (before?.reaped ?? 0));
        continue;
      }
      if (d <= 0) continue;
      const k = p.comm === 'temporal' || p.comm === 'postgres' ? p.comm : 'benchOther';
      out[k] = (out[k] ?? 0) + d;
    }
    for (const k of Object.keys(out)) out[k] = Number((out[k] as number).toFixed(2));
    return out;
  };
}
