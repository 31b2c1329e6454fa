/**
 * A pid file left behind (temporal.db.pid, pg/postmaster.pid) may name someone else's process after a reboot or a pid
 * wrap. The next start touches only a process whose command line names this home's temporal.db or pg/ directory; any
 * other is left alone, and the stale pid file is removed so the start goes on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnArmada } from '../support/armadaProcess';
import { killProcessesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(240_000);

let home: string;
const decoys: ChildProcess[] = [];

const running = (pid: number): boolean => {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()?.[0] !== 'Z';
  } catch {
    return false;
  }
};

/** A process of someone else's, in its own session like a daemon, named like the server a stale pid file expects. */
function decoy(name: string): number {
  const child = spawn('python3', ['-c', 'import time; time.sleep(600)', name], { detached: true, stdio: 'ignore' });
  decoys.push(child);
  return child.pid as number;
}

async function stopInfra(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-stalepid-'));
});
afterEach(() => {
  for (const d of decoys.splice(0)) d.kill('SIGKILL');
  killProcessesUsing(home);
  fs.rmSync(home, { recursive: true, force: true });
});

test('stale pid files naming unrelated processes: the processes live on, the files are replaced, the servers start', async () => {
  const pgPort = await freePort();
  const temporalPort = await freePort();
  const env = { ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'info', DATABASE_URL: '', TEMPORAL_ADDRESS: '' };
  const args = ['infra', '--home', home, '--pg-port', String(pgPort), '--temporal-port', String(temporalPort)];
  await stopInfra((await spawnArmada(args, 'ready', env)).child); // a home stopped cleanly: pg/ initialised, no pid files
  expect(fs.existsSync(path.join(home, 'pg', 'postmaster.pid'))).toBe(false);
  expect(fs.existsSync(path.join(home, 'temporal.db.pid'))).toBe(false);

  const temporalDecoy = decoy('fake-temporal-start-dev');
  const pgDecoy = decoy('fake-postgres');
  fs.writeFileSync(path.join(home, 'temporal.db.pid'), String(temporalDecoy));
  fs.writeFileSync(path.join(home, 'pg', 'postmaster.pid'), `${pgDecoy}\n${path.join(home, 'pg')}\n1700000000\n${pgPort}\n/tmp\n127.0.0.1\n  1234567     98765\nready   \n`);

  const second = await spawnArmada(args, 'ready', env);
  try {
    expect(running(temporalDecoy)).toBe(true);
    expect(running(pgDecoy)).toBe(true);
    const temporalPid = Number(fs.readFileSync(path.join(home, 'temporal.db.pid'), 'utf8'));
    const pgPid = Number(fs.readFileSync(path.join(home, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(temporalPid).not.toBe(temporalDecoy);
    expect(pgPid).not.toBe(pgDecoy);
    expect(fs.readFileSync(`/proc/${temporalPid}/cmdline`, 'utf8')).toContain(path.join(home, 'temporal.db'));
    expect(fs.readFileSync(`/proc/${pgPid}/cmdline`, 'utf8')).toContain(path.join(home, 'pg'));
  } finally {
    await stopInfra(second.child);
  }
  const log = second.lines.join('\n'); // the log lines (stdout) up to the ready line
  expect(log).not.toMatch(/left running by an earlier start/);
  expect(log).toMatch(/stale pid file/);
  expect(running(temporalDecoy)).toBe(true);
  expect(running(pgDecoy)).toBe(true);
});
