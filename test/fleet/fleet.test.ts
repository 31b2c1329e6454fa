/**
 * A fleet on loopback, as operators run it: one Temporal dev server and one PostgreSQL (the run's), two `armada api`
 * processes and three `armada worker` processes. 30 attempts go through both APIs; one worker is killed with
 * SIGKILL in the middle. Every attempt must reach a final state, none may run its agent to completion twice, the
 * work must spread over the workers, and a stream opened on API 1 must see events caused through API 2.
 * Then a real Prometheus scrapes the fleet and answers `armada_attempts_total` through its HTTP API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { spawnArmada } from '../support/armadaProcess';
import { createTestDatabase, env, eventually, makeGitRepo } from '../support/harness';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };
const { requireTool } = require('../../scripts/test-tools') as { requireTool(command: string): string };
const AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'scripted-agent.js');
const ATTEMPTS = 30;
jest.setTimeout(420_000);

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let home: string;
let baseEnv: NodeJS.ProcessEnv;
let promDir: string | undefined;
const children: ChildProcess[] = [];

/** `armada …` with the fleet's environment; every process is killed at the end. */
async function startArmada(args: string[], event: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  const p = await spawnArmada(args, event, { ...baseEnv, ...extraEnv });
  children.push(p.child);
  return p;
}

async function call<T = { data: unknown }>(base: string, method: string, url: string, body?: unknown): Promise<{ status: number; json: T }> {
  const r = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: (await r.json()) as T };
}

beforeAll(async () => {
  database = await createTestDatabase();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-fleet-'));
  const configPath = path.join(home, 'config.json');
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      agents: { scripted: { command: [process.execPath, AGENT], format: 'text' } },
      attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000 },
    }),
  );
  baseEnv = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: configPath,
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_TASK_QUEUE: `fleet-${process.pid}-${Date.now()}`,
    ARMADA_API_KEY: 'fleet-api-key-0123456789',
    ARMADA_LOG_LEVEL: 'warn',
    ARMADA_TEMPORAL_METRICS_PORT: '',
  };
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 500));
  await database.drop();
  fs.rmSync(home, { recursive: true, force: true });
  if (promDir) fs.rmSync(promDir, { recursive: true, force: true });
});

test('two APIs, three workers, 30 attempts, one worker killed: all final, none run twice, work spread, streams cross replicas, Prometheus sees it', async () => {
  // the fleet, its five processes started at once
  const ports = [await freePort(), await freePort()];
  const apis = ports.map((port) => `http://127.0.0.1:${port}`);
  const [, workers] = await Promise.all([
    Promise.all(ports.map((port) => startArmada(['api', '--service', 'task'], 'listening', { ARMADA_TASK_PORT: String(port) }))),
    Promise.all(
      [1, 2, 3].map(async (i) => {
        const { child, ready } = await startArmada(['worker', '--identity', `fleet-w${i}`, '--health-port', '0', '--grace', '2'], 'worker-started');
        return { child, identity: String(ready.identity), health: String(ready.health) };
      }),
    ),
  ]);

  // a real Prometheus scraping the workers that will survive and both APIs, from the start (it takes a while to come up)
  const promPort = await freePort();
  promDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-prom-'));
  const targets = [...workers.slice(1).map((w) => new URL(w.health).host), ...apis.map((a) => new URL(a).host)];
  fs.writeFileSync(
    path.join(promDir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: armada\n    static_configs:\n      - targets: ${JSON.stringify(targets)}\n`,
  );
  const prom = spawn(requireTool('prometheus'), [`--config.file=${path.join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], {
    stdio: 'ignore',
  });
  children.push(prom);

  const repo = makeGitRepo({ 'README.md': 'line 1\n' });
  const project = await call<{ data: { id: string } }>(apis[0] as string, 'POST', '/api/projects', { name: 'Fleet', repository: { url: repo } });
  expect(project.status).toBe(201);
  const projectId = project.json.data.id;

  // a WebSocket on API 1 watching a task that API 2 starts
  const watched = await call<{ data: { id: string } }>(apis[0] as string, 'POST', '/api/tasks', { projectId, title: 'SLOWEDIT watched' });
  const wsEvents: { type: string; taskId: string; status: string }[] = [];
  const ws = new WebSocket(`${(apis[0] as string).replace('http', 'ws')}/ws`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.on('message', (m) => wsEvents.push(JSON.parse(m.toString())));
  ws.send(JSON.stringify({ type: 'subscribe', channel: 'tasks', taskId: watched.json.data.id }));
  await new Promise((r) => setTimeout(r, 300));

  // 30 attempts, alternating between the two APIs (the watched task is one of them, started through API 2)
  const taskIds = [watched.json.data.id];
  for (let i = 1; i < ATTEMPTS; i++) {
    const t = await call<{ data: { id: string } }>(apis[i % 2] as string, 'POST', '/api/tasks', { projectId, title: `SLOWEDIT fleet ${i}` });
    taskIds.push(t.json.data.id);
  }
  const attemptIds: string[] = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    const started = await call<{ data: { attemptId: string } }>(apis[(i + 1) % 2] as string, 'POST', `/api/tasks/${taskIds[i]}/start`, { llm: 'scripted' });
    expect(started.status).toBe(200);
    attemptIds.push(started.json.data.attemptId);
  }

  // kill -9 one worker while agents run on it
  const victim = workers[0] as (typeof workers)[number];
  await eventually(async () => {
    const r = await call<{ data: { worker?: { identity: string } | null; status: string }[] }>(apis[0] as string, 'GET', '/api/processes?status=running');
    return r.json.data.some((p) => p.worker?.identity === victim.identity);
  }, 60_000, 200);
  victim.child.kill('SIGKILL');

  // every attempt reaches a final state
  const finals = await eventually(async () => {
    const rows = await Promise.all(attemptIds.map(async (id, i) => (await call<{ data: { id: string; status: string; branch: string; error: string | null } }>(apis[i % 2] as string, 'GET', `/api/attempts/${id}`)).json.data));
    return rows.every((a) => ['completed', 'failed', 'cancelled'].includes(a.status)) ? rows : undefined;
  }, 240_000, 1000);
  // one that is not completed is shown with its error, so a failure in CI says what happened
  expect(finals.map((a) => (a.status === 'completed' ? a.status : `${a.status} (${a.id}): ${a.error}`))).toEqual(Array(ATTEMPTS).fill('completed'));

  // none ran its agent to completion twice: each branch carries the agent's edit exactly once, in one commit
  for (const a of finals) {
    const readme = execFileSync('git', ['show', `${a.branch}:README.md`], { cwd: repo, encoding: 'utf8' });
    expect(readme.match(/added by the agent/g)).toHaveLength(1);
    const commits = execFileSync('git', ['rev-list', '--count', `main..${a.branch}`], { cwd: repo, encoding: 'utf8' }).trim();
    expect(commits).toBe('1');
  }

  // the work spread over the workers (the killed one included, before it died)
  const { rows } = await database.pool.query<{ worker_identity: string; n: string }>(
    `SELECT worker_identity, count(*) AS n FROM processes WHERE status = 'completed' GROUP BY worker_identity`,
  );
  const byWorker = Object.fromEntries(rows.map((r) => [r.worker_identity, Number(r.n)]));
  expect(Object.values(byWorker).reduce((s, n) => s + n, 0)).toBe(ATTEMPTS);
  expect(Object.keys(byWorker).filter((w) => w !== victim.identity).length).toBe(2);

  // API 1's socket saw what API 2 caused
  await eventually(async () => wsEvents.some((e) => e.type === 'task.status_changed' && e.status === 'in_progress'), 10_000);
  expect(wsEvents.filter((e) => e.type === 'task.status_changed').every((e) => e.taskId === watched.json.data.id)).toBe(true);
  ws.close();

  // the real Prometheus started with the fleet has scraped the surviving workers and both APIs: it answers armada_attempts_total
  try {
    const result = await eventually(async () => {
      const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent('sum by (status) (armada_attempts_total)')}`);
      if (!r.ok) return undefined;
      const body = (await r.json()) as { data: { result: { metric: { status: string }; value: [number, string] }[] } };
      const completed = body.data.result.find((s) => s.metric.status === 'completed');
      return completed && Number(completed.value[1]) > 0 ? body.data.result : undefined;
    }, 60_000, 1000);
    expect(result.length).toBeGreaterThan(0);
  } finally {
    prom.kill('SIGTERM');
  }
});
