/**
 * What the services log while a dependency is down: one warning when it goes down and one line when it is back
 * (lib/runtime/dependencies.ts), and nothing per request above debug. Every 503 answered meanwhile (the dependency
 * gate's, a refused PostgreSQL connection's, an unreachable Temporal's, /health's) used to add an error line with a
 * full stack (`AppError … at dependencyGate.ts`) and a warning `request answered 5xx`, so an outage flooded the log at
 * the request rate. The four services run in this process with the probes of `armada api`, on a PostgreSQL of this
 * file's own (killed with kill -9, then started again: test/support/ownPostgres.ts) and a Temporal reached through a
 * TCP proxy that refuses for the Temporal outage (test/support/tcpProxy.ts); their log lines are captured at the
 * default level, info.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildService, serviceMetrics, type ServiceName } from '../../api/services';
import { createPool } from '../../lib/db/pool';
import { resolveKeys } from '../../lib/keys';
import { createLogger } from '../../lib/logger';
import { createMetrics } from '../../lib/metrics';
import { createDependencyState, startDependencyProbes, type DependencyProbes } from '../../lib/runtime/dependencies';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { agentConfig } from '../support/attemptHelpers';
import { env, eventually, makeGitRepo, TEST_API_KEY, testConfig } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(300_000);

const SERVICES: ServiceName[] = ['task', 'scheduler', 'agents', 'traces'];
const AGENT = `logs-${crypto.randomBytes(3).toString('hex')}`;

interface Line {
  level: number;
  msg: string;
  reqId?: string;
  err?: { stack?: string };
  [key: string]: unknown;
}

let home: string;
let pg: OwnPostgres;
let proxy: TcpProxy;
let temporal: TemporalHandle;
let pool: ReturnType<typeof createPool>;
let probes: DependencyProbes;
const apps = {} as Record<ServiceName, FastifyInstance>;
const lines: Line[] = [];
let config: ReturnType<typeof testConfig>;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-outage-logs-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  // the default level: what an operator sees
  const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(JSON.parse(l) as Line) });
  config = testConfig({ ...agentConfig({ attempts: { startTimeoutMs: 3000, startReconcileAfterMs: 600_000 } }), multiAgent: { agents: [{ name: AGENT, llm: 'scripted' }] } });
  pool = createPool(pg.url, logger);
  temporal = createTemporalHandle(proxy.address, config.temporal.namespace);
  const dependencies = createDependencyState(logger);
  probes = startDependencyProbes(dependencies, { databaseUrl: pg.url, temporalAddress: proxy.address, namespace: config.temporal.namespace });
  const metrics = serviceMetrics(SERVICES, createMetrics());
  for (const s of SERVICES) {
    apps[s] = await buildService(s, { db: pool, config, keys: resolveKeys(config), temporal, logger, metrics: metrics[s], dependencies });
    await apps[s].ready();
  }
}, 240_000);

afterAll(async () => {
  proxy?.setMode('forward');
  await probes?.stop();
  await Promise.allSettled(Object.values(apps).map((a) => a.close()));
  await pool?.end();
  await temporal?.close();
  await proxy?.close();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const call = (service: ServiceName, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  apps[service].inject({ method, url, payload: payload as object, headers: service === 'task' ? {} : { 'x-api-key': TEST_API_KEY } });

/** A read of each service that needs PostgreSQL, and /health of each. */
const postgresRequests = () => [
  ...SERVICES.map((s) => () => call(s, 'GET', '/health')),
  () => call('task', 'GET', '/api/projects'),
  () => call('scheduler', 'GET', '/api/v1/workflows'),
  () => call('agents', 'GET', '/api/v1/memory/stats'),
  () => call('traces', 'GET', '/api/v1/traces'),
];

const hasStack = (l: Line) => typeof l.err?.stack === 'string' && l.err.stack.length > 0;

/**
 * What an outage must not log: a line per request at info or above (request-scoped: `reqId`), an error, a stack.
 * (Lines per connection or per background retry, e.g. the pool's `postgres client error`, are not per request.)
 */
function floodOf(logged: Line[]): string[] {
  return logged.filter((l) => (l.reqId !== undefined && l.level >= 30) || l.level >= 50 || hasStack(l)).map((l) => `${l.level} ${l.msg}`);
}

test('PostgreSQL killed: every request answers 503, logged without a line per request; one warning when it goes down, one line when it is back', async () => {
  await eventually(async () => (await Promise.all(postgresRequests().map((r) => r()))).every((a) => a.statusCode === 200), 60_000, 200);
  const from = lines.length;
  await pg.kill();
  let answered = 0;
  try {
    // the first requests reach the pool before the probe knows (a refused connection), the rest meet the gate
    const deadline = Date.now() + 4000;
    while (Date.now() < deadline) {
      const answers = await Promise.all(postgresRequests().map((r) => r()));
      expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 503));
      answered += answers.length;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await pg.start();
  }
  await eventually(async () => (await Promise.all(postgresRequests().map((r) => r()))).every((a) => a.statusCode === 200), 60_000, 200);
  const logged = lines.slice(from);
  expect(answered).toBeGreaterThan(40);
  expect(floodOf(logged)).toEqual([]);
  expect(logged.filter((l) => /^postgres is unavailable/.test(l.msg)).map((l) => l.level)).toEqual([40]);
  expect(logged.filter((l) => l.msg === 'postgres is back').map((l) => l.level)).toEqual([30]);
});

test('Temporal unreachable: starts and agent status answer 503, logged without a line per request; one warning when it goes down, one line when it is back', async () => {
  const repo = makeGitRepo();
  const project = await call('task', 'POST', '/api/projects', { name: `p-${crypto.randomBytes(3).toString('hex')}`, repository: { url: repo } });
  expect(project.statusCode).toBe(201);
  const taskIds: string[] = [];
  for (let i = 0; i < 4; i++) {
    const t = await call('task', 'POST', '/api/tasks', { projectId: project.json().data.id, title: `NOOP ${i}` });
    expect(t.statusCode).toBe(201);
    taskIds.push(t.json().data.id);
  }
  await temporal.client(); // connected before the proxy refuses
  const from = lines.length;
  proxy.setMode('refuse');
  try {
    await eventually(async () => (await call('task', 'GET', '/health')).json().down?.includes('temporal'), 30_000, 200);
    const answers = await Promise.all([
      ...taskIds.map((id) => call('task', 'POST', `/api/tasks/${id}/start`, { llm: 'scripted' })),
      ...[1, 2, 3, 4].map(() => call('agents', 'GET', `/api/v1/agents/${AGENT}/status`)),
      ...SERVICES.map((s) => call(s, 'GET', '/health')),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual(answers.map(() => 503));
  } finally {
    proxy.setMode('forward');
  }
  await eventually(async () => (await call('task', 'GET', '/health')).statusCode === 200, 60_000, 200);
  const logged = lines.slice(from);
  expect(floodOf(logged)).toEqual([]);
  expect(logged.filter((l) => /^temporal is unavailable/.test(l.msg)).map((l) => l.level)).toEqual([40]);
  expect(logged.filter((l) => l.msg === 'temporal is back').map((l) => l.level)).toEqual([30]);
});

test('an internal error still logs at error with its stack', async () => {
  const from = lines.length;
  // a query PostgreSQL refuses for a reason of ours, not an outage: the pool is closed under a route
  const closed = createPool(pg.url, createLogger('silent'));
  await closed.end();
  const app = await buildService('traces', { db: closed, config, keys: resolveKeys(config), temporal, logger: createLogger('info', 'armada', { write: (l: string) => void lines.push(JSON.parse(l) as Line) }), metrics: createMetrics() });
  try {
    const r = await app.inject({ method: 'GET', url: '/api/v1/traces', headers: { 'x-api-key': TEST_API_KEY } });
    expect(r.statusCode).toBe(500);
  } finally {
    await app.close();
  }
  const logged = lines.slice(from);
  expect(logged.filter((l) => l.level === 50 && l.msg === 'request failed' && hasStack(l)).length).toBe(1);
  expect(logged.filter((l) => l.level === 40 && l.msg === 'request answered 5xx').length).toBe(1);
});
