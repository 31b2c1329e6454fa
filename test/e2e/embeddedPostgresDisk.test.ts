/**
 * The embedded PostgreSQL's data directory on a disk of its own ($ARMADA_HOME/pg a mount point, as with a volume):
 * a half-initialised one is emptied, not removed (a mount point cannot be; EBUSY stopped the first run), and a
 * postmaster that cannot start says why in one line with what to do: the disk is full, or the port is taken. Before,
 * every failure read "is the port in use? set ARMADA_PG_PORT" followed by PostgreSQL's last three lines, which cut off
 * the cause.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN, spawnArmada } from '../support/armadaProcess';
import { killProcessesUsing } from '../support/processes';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

let home: string;
let pgDir: string;
const env = () => ({ ...process.env, ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'warn', DATABASE_URL: '', TEMPORAL_ADDRESS: '' });
const infraArgs = async (pgPort?: number) => ['infra', '--home', home, '--pg-port', String(pgPort ?? (await freePort())), '--temporal-port', String(await freePort())];

/** `armada infra` that is expected to fail: its exit status and stderr. */
async function failingInfra(pgPort?: number): Promise<{ status: number | null; stderr: string }> {
  const r = spawnSync(process.execPath, [ARMADA_BIN, ...(await infraArgs(pgPort))], { env: env(), encoding: 'utf8', timeout: 90_000 });
  return { status: r.status, stderr: r.stderr.trim() };
}

async function startAndStop(): Promise<void> {
  const infra = await spawnArmada(await infraArgs(), 'ready', env(), 300_000);
  const exited = new Promise((resolve) => infra.child.once('exit', resolve));
  infra.child.kill('SIGTERM');
  await exited;
}

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pgdisk-'));
  pgDir = path.join(home, 'pg');
  fs.mkdirSync(pgDir);
  spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=128m', 'tmpfs', pgDir], { stdio: 'inherit' });
  if (fs.statSync(pgDir).dev === fs.statSync(home).dev) throw new Error(`could not mount a tmpfs at ${pgDir} (the test runs as root)`);
});
afterAll(() => {
  killProcessesUsing(home);
  spawnSync('umount', ['-l', pgDir]);
  fs.rmSync(home, { recursive: true, force: true });
});

test('a half-initialised data directory that is a mount point is emptied and initialised in place', async () => {
  fs.writeFileSync(path.join(pgDir, 'left-by-a-crash'), 'x');
  await startAndStop();
  expect(fs.statSync(pgDir).dev).not.toBe(fs.statSync(home).dev); // still the mount, now holding the cluster
  expect(fs.existsSync(path.join(pgDir, 'PG_VERSION'))).toBe(true);
  expect(fs.existsSync(path.join(pgDir, 'left-by-a-crash'))).toBe(false);
}, 300_000);

test('a full disk under the data directory: one line naming the disk and saying to free space; once freed, it starts', async () => {
  const filler = path.join(pgDir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(1024 * 1024);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    fs.closeSync(fd);
  }
  const r = await failingInfra();
  expect(r.status).toBe(1);
  expect(r.stderr.split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(new RegExp(`^armada: embedded postgres did not start: the disk holding ${pgDir} is full \\(.*No space left on device.*\\); free space on it, then start again$`));

  fs.rmSync(filler);
  await startAndStop();
}, 300_000);

test('a port in use: one line naming the port and saying to set ARMADA_PG_PORT', async () => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as net.AddressInfo).port;
  try {
    const r = await failingInfra(port);
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(new RegExp(`^armada: embedded postgres did not start: port ${port} is in use \\(could not create any TCP/IP sockets\\); stop what listens there, or set ARMADA_PG_PORT to a free port$`));
  } finally {
    taken.close();
  }
}, 120_000);
