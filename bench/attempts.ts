/**
 * Attempt engine benchmark, one run on a local dev server (run: `npx tsx bench/attempts.ts`; < 2 min):
 *  1. attempts/s end to end: POST /api/tasks/:id/start → attempt completed, with a no-op agent (`true`);
 *  2. the same-shape bare Temporal workflow (4 no-op activities) rate in the same run, and the ratio;
 *  3. p50/p99 of POST /api/tasks/:id/start at a fixed 20 req/s (autocannon), with the worker running;
 *  4. the start path alone (worker stopped; `armada api` in a process of its own) against its baseline, a bare
 *     `client.workflow.start` from this process at the same fixed rate on the same server, in alternating rounds
 *     (BENCH_RATE_ROUNDS) so both see the same machine; and the start path's parts, from each answer's Server-Timing
 *     header (the commit, the workflow start, the rest of the service's work, and outside the handler).
 * Env: BENCH_ATTEMPTS (default 100), BENCH_CONCURRENCY (10), BENCH_RATE_SECONDS (10), BENCH_RATE_ROUNDS (3): 100 attempts
 * and 600 starts per side, so neither the rate nor the p99 (the 6th slowest start) rests on a handful of samples.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { buildService } from '../api/services';
import { loadConfig } from '../lib/config';
import { createPool } from '../lib/db/pool';
import { resolveKeys } from '../lib/keys';
import { createLogger } from '../lib/logger';
import { createMetrics } from '../lib/metrics';
import { createTemporalHandle } from '../lib/temporal/client';
import { sdkLogger } from '../lib/temporal/sdkLogger';
import { startWorkers } from '../workers/createWorker';
import { benchRepo, fixedRate, freePort, percentiles, settleDisk, spawnArmada, startInfra } from './benchInfra';
import { cpuShare } from './cpuShare';

const N = Number(process.env.BENCH_ATTEMPTS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 10);
const RATE_ROUNDS = Number(process.env.BENCH_RATE_ROUNDS ?? 3);
const RATE = 20;

async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) await fn(items[i++] as T);
  }));
}

/**
 * POST with node:http on a keep-alive agent (as autocannon speaks HTTP): the start path's latency is the service's,
 * not fetch()'s, whose own cost in this process measured p50 +0.3 ms and p99 +1.5–2.6 ms over node:http against a
 * server that answers at once (docs/benchmarks.md, "Session 23").
 */
const keepAlive = new http.Agent({ keepAlive: true });
function postRaw(url: string, body: string): Promise<{ status: number; serverTiming: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: keepAlive, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, serverTiming: String(res.headers['server-timing'] ?? '') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `db;dur=1.52, temporal;dur=4.10, total;dur=6.01` → { db: 1.52, temporal: 4.1, total: 6.01 } */
function parseServerTiming(header: string): Record<string, number> {
  return Object.fromEntries(header.split(',').map((p) => p.trim().split(';dur=')).filter((p) => p.length === 2).map(([n, d]) => [n, Number(d)]));
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-'));
  const inf = await startInfra(home);
  const logger = createLogger('warn');
  Runtime.install({ logger: sdkLogger(logger), shutdownSignals: [] });
  const configPath = path.join(home, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify({ agents: { noop: { command: ['true'], format: 'text' } } }));
  const config = loadConfig({ HOME: os.homedir(), ARMADA_HOME: home, ARMADA_CONFIG: configPath, TEMPORAL_ADDRESS: inf.temporalAddress, ARMADA_TASK_QUEUE: 'bench', ARMADA_API_KEY: 'bench-api-key-0123456789' });
  const db = createPool(inf.databaseUrl, logger, { max: 20 });
  const metrics = createMetrics();
  const temporal = createTemporalHandle(inf.temporalAddress, 'default');
  const workers = await startWorkers({ config, db, logger, metrics, address: inf.temporalAddress, namespace: 'default', workflowBundle: { codePath: inf.bundle }, concurrency: 20 });
  const app = await buildService('task', { db, config, keys: resolveKeys(config), temporal, logger, metrics });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });

  const repo = benchRepo(path.join(home, 'repo'));
  const post = async (url: string, body: unknown) => (await app.inject({ method: 'POST', url, payload: body as object })).json();
  const projectId = (await post('/api/projects', { name: 'bench', repository: { url: repo } })).data.id;
  const taskIds: string[] = [];
  for (let i = 0; i < N; i++) taskIds.push((await post('/api/tasks', { projectId, title: `bench ${i}` })).data.id);

  // warm-up: one attempt end to end
  const warm = (await post(`/api/tasks/${taskIds[0]}/start`, { llm: 'noop' })).data.attemptId;
  await waitCompleted(db, [warm]);
  await settleDisk();

  // 1. attempts end to end
  const t0 = Date.now();
  const attemptCpu = cpuShare();
  const ids: string[] = [];
  await pool(taskIds, CONCURRENCY, async (id) => {
    ids.push((await post(`/api/tasks/${id}/start`, { llm: 'noop' })).data.attemptId);
  });
  await waitCompleted(db, ids);
  const attemptSecs = (Date.now() - t0) / 1000;
  const attemptCpuSeconds = attemptCpu();
  const attemptRate = N / attemptSecs;

  // 2. bare same-shape workflow, same server, same run
  const bareConn = await NativeConnection.connect({ address: inf.temporalAddress });
  const bareWorker = await Worker.create({
    connection: bareConn,
    taskQueue: 'bench-bare',
    workflowBundle: await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'bareAttemptShapeWorkflow.ts'), logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } }),
    activities: { prepare: async (id: string) => id, run: async (id: string) => id, commit: async (id: string) => id, record: async () => undefined },
    maxConcurrentActivityTaskExecutions: 20,
  });
  const bareRun = bareWorker.run();
  const client = new Client({ connection: await Connection.connect({ address: inf.temporalAddress }) });
  await client.workflow.execute('bareAttemptShapeWorkflow', { workflowId: 'bare-warm', taskQueue: 'bench-bare', args: ['warm'] });
  const t1 = Date.now();
  const bareCpu = cpuShare();
  await pool(Array.from({ length: N }, (_, i) => i), CONCURRENCY, async (i) => {
    await client.workflow.execute('bareAttemptShapeWorkflow', { workflowId: `bare-${i}`, taskQueue: 'bench-bare', args: [String(i)] });
  });
  const bareSecs = (Date.now() - t1) / 1000;
  const bareCpuSeconds = bareCpu();
  const bareRate = N / bareSecs;
  bareWorker.shutdown();
  await bareRun;
  // the start baseline below uses the same client

  // 3. POST start latency at a fixed 20 req/s, each request on a task of its own (a start locks its task row):
  //    (a) with the worker running the attempts it starts (in this process, on the same 2 cores), (b) with the worker
  //    stopped, so only the start path (validation, phase 1's one statement, the workflow start) is measured
  const rateTasks: string[] = [];
  for (let i = 0; i < (1 + RATE_ROUNDS) * (RATE * RATE_SECONDS + 40); i++) rateTasks.push((await post('/api/tasks', { projectId, title: `rate ${i}` })).data.id);
  let next = 0;
  const rate = () =>
    autocannon({
      url: base,
      connections: 40,
      overallRate: 20,
      duration: RATE_SECONDS,
      requests: [
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ llm: 'noop' }),
          setupRequest: (req) => ({ ...req, path: `/api/tasks/${rateTasks[next++ % rateTasks.length]}/start` }),
        },
      ],
    });
  const withWorker = await rate();
  await new Promise((r) => setTimeout(r, 3000)); // let in-flight starts finish
  await workers.stop();
  // the start path alone is served by `armada api` in a process of its own, as in a deployment: in this process the
  // API's work after an answer (publishing the start's events) ran before this client could read the answer. The
  // in-process service stops too, so this process is only a client: left running, it listened for the spawned API's
  // notifications (task changes, events for webhooks) and did their work while its starts' answers were on the way.
  await app.close();
  await temporal.close();
  await db.end();
  const apiPort = await freePort();
  const api = await spawnArmada(['api', '--service', 'task'], 'listening', {
    ARMADA_HOME: home,
    ARMADA_CONFIG: configPath,
    DATABASE_URL: inf.databaseUrl,
    TEMPORAL_ADDRESS: inf.temporalAddress,
    ARMADA_TASK_QUEUE: 'bench',
    ARMADA_TASK_PORT: String(apiPort),
  });
  const apiBase = `http://127.0.0.1:${apiPort}`;
  // warm-up of the new process (its JIT, its pools' connections and their prepared statements), not measured
  await fixedRate(5, RATE, async () => {
    await postRaw(`${apiBase}/api/tasks/${rateTasks[next++ % rateTasks.length]}/start`, JSON.stringify({ llm: 'noop' }));
  });
  await settleDisk(); // the worktrees of the attempts above
  // the start path alone vs a bare workflow start (to a queue no worker polls, as the attempts' queue now is)
  const armadaStart: number[] = [];
  const bareStart: number[] = [];
  // each start's parts, from its Server-Timing header (docs/attempts.md, "Where a start's time went")
  const startParts: { client: number; db: number; temporal: number; total: number }[] = [];
  let armadaErrors = 0;
  let bareErrors = 0;
  let bareN = 0;
  for (let round = 0; round < RATE_ROUNDS; round++) {
    const b = await fixedRate(RATE_SECONDS, RATE, async () => {
      await client.workflow.start('bareAttemptShapeWorkflow', { workflowId: `bare-start-${bareN++}`, taskQueue: 'bench-bare-unpolled', args: ['x'] });
    });
    bareStart.push(...b.latencies);
    bareErrors += b.errors;
    await new Promise((r) => setTimeout(r, 1000));
    const a = await fixedRate(RATE_SECONDS, RATE, async () => {
      const began = performance.now();
      const r = await postRaw(`${apiBase}/api/tasks/${rateTasks[next++ % rateTasks.length]}/start`, JSON.stringify({ llm: 'noop' }));
      if (r.status !== 200) throw new Error(`status ${r.status}`);
      const t = parseServerTiming(r.serverTiming);
      startParts.push({ client: performance.now() - began, db: t.db ?? 0, temporal: t.temporal ?? 0, total: t.total ?? 0 });
    });
    armadaStart.push(...a.latencies);
    armadaErrors += a.errors;
    await new Promise((r) => setTimeout(r, 1000));
  }
  api.child.kill('SIGTERM');
  const lat = (r: Awaited<ReturnType<typeof autocannon>>) => ({ rate: RATE, requests: r.requests.total, non2xx: r.non2xx, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max });
  const startOnly = { rate: RATE, ...percentiles(armadaStart), errors: armadaErrors };
  const bareStartLat = { rate: RATE, ...percentiles(bareStart), errors: bareErrors };
  // where the start path's time goes: phase 1's commit, the workflow start, the rest of the service's work (routing,
  // validation, the handler), and outside the handler (the HTTP hop both ways, the answer's serialization and write)
  const part = (f: (p: (typeof startParts)[number]) => number) => {
    const { p50, p90, p99 } = percentiles(startParts.map(f));
    return { p50, p90, p99 };
  };
  const startPathPartsMs = {
    commit: part((p) => p.db),
    workflowStart: part((p) => p.temporal),
    restOfService: part((p) => p.total - p.db - p.temporal),
    outsideHandler: part((p) => p.client - p.total),
  };

  const out = {
    attempts: N,
    concurrency: CONCURRENCY,
    attemptsPerSecond: Number(attemptRate.toFixed(2)),
    bareWorkflowsPerSecond: Number(bareRate.toFixed(2)),
    ratio: Number((attemptRate / bareRate).toFixed(3)),
    // CPU seconds per program during each part (where the time goes; the machine has os.cpus().length cores)
    cpuSecondsAttempts: attemptCpuSeconds,
    cpuSecondsBare: bareCpuSeconds,
    startLatencyMsWithWorker: lat(withWorker),
    startLatencyMsStartPathOnly: startOnly,
    bareWorkflowStartLatencyMs: bareStartLat,
    startP99OverBareP99: Number((startOnly.p99 / bareStartLat.p99).toFixed(2)),
    startPathPartsMs,
    cpus: os.cpus().length,
    loadavg: os.loadavg().map((l) => Number(l.toFixed(2))),
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  keepAlive.destroy();
  await inf.stop();
  fs.rmSync(home, { recursive: true, force: true, maxRetries: 3 }); // its PostgreSQL data alone is 150–270 MB
  process.exit(0);
}

async function waitCompleted(db: ReturnType<typeof createPool>, ids: string[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM attempts WHERE id = ANY($1::text[]) AND status IN ('completed', 'failed')`, [ids]);
    if (Number(rows[0]?.n) === ids.length) return;
    if (Date.now() > deadline) throw new Error('attempts did not complete in 120 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
