/** Live processes (zombies excluded) whose command line mentions `dir`, as `<pid>: <command line>`, read from /proc. */
import fs from 'node:fs';

export function processesUsing(dir: string): string[] {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const state = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmd.includes(dir) && state !== 'Z') found.push(`${pid}: ${cmd}`);
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
