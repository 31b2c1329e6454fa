/**
 * ARMADA_HOST as a wildcard (::, 0.0.0.0) or an IPv6 literal (::1, [::1]): the URLs the CLI prints and dials are URLs
 * a client on this host can use (lib/hostAddress.ts): a wildcard bind is reached at 127.0.0.1, an IPv6 literal is
 * bracketed. `armada api`'s listening line (the addresses `armada start` prints too), `armada worker`'s health URL
 * and its Temporal metrics listener (which takes only an IP address: a host name such as localhost is resolved), and
 * `armada status`'s probes.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ArmadaStatus } from '../../cli/status';
import { spawnArmada, type ArmadaProcess } from '../support/armadaProcess';
import { ARMADA_BIN } from '../support/armadaProcess';
import { createTestDatabase, env as testEnv } from '../support/harness';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(180_000);

let home: string;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let base: NodeJS.ProcessEnv;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-host-addresses-'));
  db = await createTestDatabase();
  base = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: '',
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: testEnv('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_TASK_QUEUE: `host-addresses-${process.pid}`,
    ARMADA_LOG_LEVEL: 'warn',
    ARMADA_TEMPORAL_METRICS_PORT: '',
  };
});
afterAll(async () => {
  await db?.drop();
  fs.rmSync(home, { recursive: true, force: true });
});

async function stop(p: ArmadaProcess | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null) return;
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGTERM');
  await exited;
}

function status(extraEnv: NodeJS.ProcessEnv): Promise<ArmadaStatus> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [ARMADA_BIN, 'status', '--json'], { env: { ...base, ...extraEnv }, timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout))));
  });
}

test('armada api on :: prints 127.0.0.1 URLs that answer; armada status dials ::, 0.0.0.0, ::1 and [::1] as URLs that work', async () => {
  const port = await freePort();
  const ports = { ARMADA_SCHEDULER_PORT: String(port), ARMADA_SCHEDULER_ALT_PORT: '', ARMADA_TASK_PORT: '1', ARMADA_AGENTS_PORT: '2', ARMADA_TRACES_PORT: '3' };
  let api: ArmadaProcess | undefined;
  try {
    api = await spawnArmada(['api', '--service', 'scheduler'], 'listening', { ...base, ...ports, ARMADA_HOST: '::' }, 120_000);
    const url = `http://127.0.0.1:${port}`;
    expect(api.ready.addresses).toEqual({ scheduler: url });
    expect((await fetch(`${url}/health`)).status).toBe(200);

    const expected: [string, string][] = [
      ['::', url],
      ['0.0.0.0', url],
      ['::1', `http://[::1]:${port}`],
      ['[::1]', `http://[::1]:${port}`],
    ];
    for (const [host, schedulerUrl] of expected) {
      // the embedded Temporal of a home listens on 127.0.0.1 only, whatever ARMADA_HOST says
      const s = await status({ ...ports, ARMADA_HOST: host, DATABASE_URL: '', TEMPORAL_ADDRESS: '', ARMADA_TEMPORAL_PORT: '17233' });
      expect([host, s.services.find((x) => x.name === 'scheduler')]).toEqual([host, expect.objectContaining({ url: schedulerUrl, state: 'up' })]);
      const wildcard = host === '::' || host === '0.0.0.0';
      expect([host, s.services.find((x) => x.name === 'task')?.url]).toEqual([host, wildcard ? 'http://127.0.0.1:1' : 'http://[::1]:1']);
      expect([host, s.temporal.address]).toEqual([host, '127.0.0.1:17233']);
    }
  } finally {
    await stop(api);
  }
});

test('armada worker on :: prints a 127.0.0.1 health URL that answers, and serves Temporal metrics on [::]', async () => {
  const healthPort = await freePort();
  const metricsPort = await freePort();
  let worker: ArmadaProcess | undefined;
  try {
    worker = await spawnArmada(['worker', '--health-port', String(healthPort)], 'worker-started', { ...base, ARMADA_HOST: '::', ARMADA_TEMPORAL_METRICS_PORT: String(metricsPort) }, 120_000);
    expect(worker.ready.health).toBe(`http://127.0.0.1:${healthPort}`);
    expect((await fetch(`http://127.0.0.1:${healthPort}/health`)).status).toBe(200);
    const metrics = await fetch(`http://[::1]:${metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
  } finally {
    await stop(worker);
  }
});

test('armada worker with ARMADA_HOST=localhost (a host name, not an IP literal) runs, and its Temporal metrics answer there', async () => {
  const healthPort = await freePort();
  const metricsPort = await freePort();
  let worker: ArmadaProcess | undefined;
  try {
    // the SDK's Prometheus listener takes only an IP literal: given "localhost:<port>" it refused, and the worker exited
    worker = await spawnArmada(['worker', '--health-port', String(healthPort)], 'worker-started', { ...base, ARMADA_HOST: 'localhost', ARMADA_TEMPORAL_METRICS_PORT: String(metricsPort) }, 120_000);
    expect(worker.ready.health).toBe(`http://localhost:${healthPort}`);
    expect((await fetch(`http://localhost:${healthPort}/health`)).status).toBe(200);
    const metrics = await fetch(`http://localhost:${metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
  } finally {
    await stop(worker);
  }
});
