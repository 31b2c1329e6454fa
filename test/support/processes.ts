/** Live processes (zombies excluded) whose command line mentions `dir`, as `<pid>: <command line>`, read from /proc. */
import fs from 'node:fs';
import { processAlive } from '../../lib/process/procStat';

/** Whether `pid` runs and is no zombie (lib/process/procStat.ts), for the tests that take it from here. */
export { processAlive };

/** Live processes whose working directory is `dir` or below it (an agent's in its worktree), from /proc. */
export function processesIn(dir: string): number[] {
  const found: number[] = [];
  for (const e of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cwd = fs.readlinkSync(`/proc/${e}/cwd`);
      if ((cwd === dir || cwd.startsWith(`${dir}/`)) && processAlive(Number(e))) found.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return found;
}

export function processesUsing(dir: string): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(dir) && processAlive(pid)) found.push(`${pid}: ${cmd}`);
    } catch {
      /* gone */
    }
  }
  return found;
}

/** The pids of processesUsing(dir). */
export const pidsUsing = (dir: string): number[] => processesUsing(dir).map((p) => Number(p.split(':')[0]));

/** SIGKILL to every processesUsing(dir): what a test left running (its afterEach). */
export function killProcessesUsing(dir: string): void {
  for (const pid of pidsUsing(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/** Live processes (zombies excluded) whose command line names `text` (a clone's `.partial` path), from /proc. */
export function processesNaming(text: string): number[] {
  const found: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (!processAlive(e)) continue;
      if (fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').join(' ').includes(text)) found.push(Number(e));
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}
