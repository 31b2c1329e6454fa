/**
 * PostgreSQL stopped under running services: every service answers 503 from the first request on, at once, in its
 * own shape, with Retry-After, and serves the same requests again once the server is back, without a restart.
 * `armada api` runs the four services against a PostgreSQL of this file's own (the embedded one, which the test stops
 * and starts: test/support/ownPostgres.ts), once stopped (a fast shutdown) and once killed (kill -9).
 *
 * Measured on the old code: those first requests were already answered in milliseconds (a refused connection fails at
 * once) but without Retry-After, until the probes' next look (up to a second later) had the gate answer them with it.
 * The probes now also look at once when the server ends their connection, shown here with an interval of ten minutes.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Client } from 'pg';
import WebSocket from 'ws';
import { buildService, serviceMetrics } from '../../api/services';
import { createPool } from '../../lib/db/pool';
import { resolveKeys } from '../../lib/keys';
import { createMetrics } from '../../lib/metrics';
import { createDependencyState, startDependencyProbes } from '../../lib/runtime/dependencies';
import { createTemporalHandle } from '../../lib/temporal/client';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { env, eventually, logger, makeGitRepo, TEST_API_KEY, testConfig } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { timedRequest, type TimedAnswer as Answer } from '../support/timedRequest';

jest.setTimeout(300_000);

type Service = 'task' | 'scheduler' | 'agents' | 'traces';
const SERVICES: Service[] = ['task', 'scheduler', 'agents', 'traces'];

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pg-outage-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url });
});

afterAll(async () => {
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** Where each service listens: `armada api`'s ports, or apps of this process. */
type Bases = Record<Service, string>;
const apiBases = () => Object.fromEntries(SERVICES.map((s) => [s, api.base(s)])) as Bases;

const send = (bases: Bases, service: Service, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<Answer> =>
  timedRequest(`${bases[service]}${url}`, { method, payload, headers: service === 'task' ? {} : { 'x-api-key': TEST_API_KEY }, timeoutMs: 60_000 });

/** One read of each service and a write of two, as a client sends them; `ok` is the status when PostgreSQL answers. */
let traceSeq = 0;

function requests(bases: Bases, round: string): { name: string; service: Service; ok: number; send(): Promise<Answer> }[] {
  return [
    { name: 'task: list projects', service: 'task', ok: 200, send: () => send(bases, 'task', 'GET', '/api/projects') },
    { name: 'scheduler: list workflows', service: 'scheduler', ok: 200, send: () => send(bases, 'scheduler', 'GET', '/api/v1/workflows') },
    { name: 'agents: memory stats', service: 'agents', ok: 200, send: () => send(bases, 'agents', 'GET', '/api/v1/memory/stats') },
    { name: 'agents: store memory', service: 'agents', ok: 201, send: () => send(bases, 'agents', 'POST', '/api/v1/memory', { content: `kept in ${round}` }) },
    { name: 'traces: list traces', service: 'traces', ok: 200, send: () => send(bases, 'traces', 'GET', `/api/v1/traces?instance=${round}`) },
    {
      name: 'traces: record a trace',
      service: 'traces',
      ok: 201,
      send: () => send(bases, 'traces', 'POST', '/api/v1/traces', { messageId: `${round}-${++traceSeq}`, instance: round, to: '+15550102000', message: 'hello' }),
    },
  ];
}

const UNAVAILABLE_MESSAGE = /PostgreSQL.*try again/;

/** What is wrong with a 503 of a PostgreSQL outage (status, time, shape, Retry-After), or undefined. */
function outageAnswerProblem(service: Service, a: Answer): string | undefined {
  if (a.status !== 503) return `status ${a.status}`;
  if (a.ms >= 3000) return `answered after ${a.ms} ms`;
  if (a.retryAfter !== '1') return `Retry-After ${a.retryAfter}`; // docs/operations.md: one second
  if (service === 'task') {
    const error = a.body.error as { code?: unknown; message?: unknown } | undefined;
    if (a.body.success !== false || error?.code !== 'SERVICE_UNAVAILABLE' || !UNAVAILABLE_MESSAGE.test(String(error.message))) return `body ${JSON.stringify(a.body)}`;
  } else if (Object.keys(a.body).join() !== 'detail' || !UNAVAILABLE_MESSAGE.test(String(a.body.detail))) return `body ${JSON.stringify(a.body)}`;
  return undefined;
}

/** True once every request of the round is served (throws saying which is not). */
async function allServed(bases: Bases, round: string): Promise<true> {
  for (const r of requests(bases, round)) {
    const a = await r.send();
    if (a.status !== r.ok) throw new Error(`${r.name}: ${a.status} ${JSON.stringify(a.body)}`);
  }
  return true;
}

/** Sends the round's requests right after `outage`, and finds what is wrong with each answer (expected: none). */
async function firstAnswersProblems(bases: Bases, round: string): Promise<string[][]> {
  const answers = await Promise.all(requests(bases, round).map(async (r) => ({ r, a: await r.send() })));
  return answers.map(({ r, a }) => [r.name, outageAnswerProblem(r.service, a) ?? '']).filter(([, p]) => p);
}

describe.each([
  ['stopped (fast shutdown)', 'stop'],
  ['killed (kill -9)', 'kill'],
] as const)('PostgreSQL %s under armada api', (_what, how) => {
  test('the first requests to each service answer 503 at once with Retry-After; served again once it is back, by the same process', async () => {
    const bases = apiBases();
    const round = `api-${how}`;
    await eventually(() => allServed(bases, round), 60_000, 200); // up, and the pools have connections
    const pid = api.child.pid;

    await (how === 'stop' ? pg.stop() : pg.kill());
    try {
      expect(await firstAnswersProblems(bases, round)).toEqual([]);
      // and each service says what is down
      for (const s of SERVICES) {
        await eventually(async () => {
          const h = await send(bases, s, 'GET', '/health');
          return h.status === 503 && (h.body.down as string[] | undefined)?.includes('postgres');
        }, 20_000);
      }
    } finally {
      await pg.start(); // also after a failure: the next test needs it
    }
    try {
      await eventually(() => allServed(bases, round), 60_000, 200);
    } catch (err) {
      throw new Error(`${(err as Error).message}\narmada api output:\n${api.output().slice(-4000)}`);
    }
    expect(api.child.pid).toBe(pid);
    expect(api.child.exitCode).toBeNull();
    for (const s of SERVICES) expect((await send(bases, s, 'GET', '/health')).status).toBe(200);
    // the trace refused during the outage was not written: the one before and the one after are
    expect((await send(bases, 'traces', 'GET', `/api/v1/traces?instance=${round}`)).body.total).toBe(2);
  });
});

test('before anything knows it is down, a refused connection is a 503 with Retry-After in each service too', async () => {
  // the four services in this process with no dependency tracking: every request goes to the pool, as those sent in
  // `armada api` before the probes have looked do
  const config = testConfig();
  const pool = createPool(pg.url, logger);
  const temporal = createTemporalHandle(env('ARMADA_TEST_TEMPORAL_ADDRESS'), config.temporal.namespace);
  const metrics = serviceMetrics(SERVICES, createMetrics());
  const apps: FastifyInstance[] = [];
  try {
    const bases = {} as Bases;
    for (const s of SERVICES) {
      const app = await buildService(s, { db: pool, config, keys: resolveKeys(config), temporal, logger, metrics: metrics[s] });
      apps.push(app);
      bases[s] = await app.listen({ host: '127.0.0.1', port: 0 });
    }
    const round = 'in-process';
    await allServed(bases, round);
    await pg.stop();
    try {
      expect(await firstAnswersProblems(bases, round)).toEqual([]);
    } finally {
      await pg.start();
    }
    await eventually(() => allServed(bases, round), 60_000, 200); // the pool connects again by itself
    expect((await send(bases, 'traces', 'GET', `/api/v1/traces?instance=${round}`)).body.total).toBe(2);
  } finally {
    await Promise.allSettled(apps.map((a) => a.close()));
    await pool.end();
    await temporal.close();
    fs.rmSync(config.home, { recursive: true, force: true });
  }
});

test('the probes look at once when PostgreSQL ends their connection: a stopped server is down at once; one session ended is no outage', async () => {
  const state = createDependencyState(logger);
  let answered = 0;
  const markUp = state.markUp.bind(state);
  state.markUp = (name) => {
    if (name === 'postgres') answered++;
    markUp(name);
  };
  // the next look by the clock would come only after ten minutes
  const probes = startDependencyProbes(state, { databaseUrl: pg.url, namespace: 'default', intervalMs: 600_000 });
  try {
    await eventually(async () => answered >= 1, 30_000);
    // an administrator ends the probes' sessions (pg_terminate_backend) while the server runs
    const admin = new Client({ connectionString: pg.url });
    await admin.connect();
    try {
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'armada-probe'");
    } finally {
      await admin.end();
    }
    await eventually(async () => answered >= 2, 30_000); // looked again on a new connection, and it answered
    expect(state.isDown('postgres')).toBe(false);

    await pg.stop();
    await eventually(async () => state.isDown('postgres'), 30_000);
  } finally {
    await probes.stop();
    await pg.start();
  }
});

test('a PostgreSQL host name that no longer resolves (a stopped compose container) is a 503 with Retry-After, not a 500', async () => {
  const config = testConfig();
  // `.invalid` never resolves (RFC 2606): getaddrinfo answers ENOTFOUND, or EAI_AGAIN without a resolver
  const pool = createPool('postgres://armada:armada@armada-postgres.invalid:5432/armada', logger);
  const temporal = createTemporalHandle(env('ARMADA_TEST_TEMPORAL_ADDRESS'), config.temporal.namespace);
  const apps: FastifyInstance[] = [];
  try {
    const bases = {} as Bases;
    for (const s of ['scheduler', 'traces'] as const) {
      const app = await buildService(s, { db: pool, config, keys: resolveKeys(config), temporal, logger, metrics: createMetrics() });
      apps.push(app);
      bases[s] = await app.listen({ host: '127.0.0.1', port: 0 });
    }
    for (const [service, url] of [['scheduler', '/api/v1/workflows'], ['traces', '/api/v1/traces']] as const) {
      const a = await send(bases, service, 'GET', url);
      expect({ service, status: a.status, retryAfter: a.retryAfter, body: a.body }).toEqual({ service, status: 503, retryAfter: '1', body: { detail: expect.stringMatching(UNAVAILABLE_MESSAGE) } });
    }
  } finally {
    await Promise.allSettled(apps.map((a) => a.close()));
    await pool.end();
    await temporal.close();
    fs.rmSync(config.home, { recursive: true, force: true });
  }
});

test('armada api started while PostgreSQL is stopped: it listens and answers 503 with Retry-After, /health names postgres; once PostgreSQL starts, requests are served, /ws/events streams what is new and stored credentials are sealed', async () => {
  // a row an older Armada left with its repository credentials in the URL: the task service seals it at start
  const legacy = crypto.randomUUID();
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query(`INSERT INTO projects (id, name, repo_url) VALUES ($1, 'legacy', 'https://someone:s3cret-token@git.example.invalid/r.git')`, [legacy]);
  await admin.end();
  await pg.stop();
  let late: ApiProcess | undefined;
  const sockets: WebSocket[] = [];
  try {
    // before: the task service's event listener read its starting point at start, and the process exited 1
    // (`armada: connect ECONNREFUSED`): a replica restarted during an outage refused connections instead of a 503
    late = await spawnApi({ home: fs.mkdtempSync(path.join(home, 'late-')), databaseUrl: pg.url });
    const bases = Object.fromEntries(SERVICES.map((s) => [s, (late as ApiProcess).base(s)])) as Bases;
    const round = 'started-while-down';
    expect(await firstAnswersProblems(bases, round)).toEqual([]);
    for (const s of SERVICES) {
      const h = await send(bases, s, 'GET', '/health');
      expect({ service: s, status: h.status, down: (h.body.down as string[] | undefined)?.includes('postgres') }).toEqual({ service: s, status: 503, down: true });
    }
    const refusedStream = await timedRequest(`${bases.task}/ws/events`, { method: 'GET', timeoutMs: 60_000 });
    expect(refusedStream.status).toBe(503);

    await pg.start();
    await eventually(() => allServed(bases, round), 60_000, 200);
    for (const s of SERVICES) expect((await send(bases, s, 'GET', '/health')).status).toBe(200);

    // the event stream starts at what is stored now: it replays nothing older, and sends what is new
    const reader = new Client({ connectionString: pg.url });
    await reader.connect();
    const before = Number((await reader.query<{ m: string }>('SELECT coalesce(max(seq), 0) AS m FROM events')).rows[0]?.m);
    const events: { seq: number; type: string; data: Record<string, unknown> }[] = [];
    await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          const ws = new WebSocket(`${bases.task.replace('http', 'ws')}/ws/events`);
          ws.on('message', (d) => events.push(JSON.parse(String(d)) as (typeof events)[number]));
          ws.once('open', () => {
            sockets.push(ws);
            resolve(true);
          });
          ws.once('error', () => resolve(false)); // a 503 until the listener has its starting point (a second at most)
        }),
      30_000,
      500,
    );
    const project = await send(bases, 'task', 'POST', '/api/projects', { name: 'Late', repository: { url: makeGitRepo() } });
    expect(project.status).toBe(201);
    const task = await send(bases, 'task', 'POST', '/api/tasks', { projectId: (project.body.data as { id: string }).id, title: 'after a late start' });
    expect(task.status).toBe(201);
    await eventually(async () => events.some((e) => e.type === 'task.created' && e.data.title === 'after a late start'), 30_000, 100);
    expect(events.filter((e) => e.type !== 'stream.ready' && e.seq <= before).map((e) => [e.seq, e.type])).toEqual([]);
    // the sealing pass PostgreSQL refused at start ran once it answered (before: only at the next start)
    await eventually(async () => {
      const row = (await reader.query<{ repo_url: string; sealed: boolean }>('SELECT repo_url, repo_credentials_sealed IS NOT NULL AS sealed FROM projects WHERE id = $1', [legacy])).rows[0];
      return row?.sealed && !row.repo_url.includes('s3cret-token');
    }, 60_000, 500);
    await reader.end();
    expect(late.child.exitCode).toBeNull();
  } finally {
    for (const ws of sockets) ws.terminate();
    await pg.start();
    await late?.stop();
  }
});
