/**
 * Task-service read benchmark (autocannon): GET /api/tasks/:id and GET /api/tasks?limit=20 on 10k seeded tasks,
 * against a bare Fastify + pg single-row select (the baseline) and a bare Fastify + pg select of the same 20
 * rows (same work as the list page), both measured in the same run. The servers run in a child process so the
 * load generator does not share their event loop.
 *
 *   node bin/armada-ts bench/api.ts [--duration 10] [--connections 32] [--tasks 10000] [--writes 50] [--only list,single,…]
 *
 * The list is measured three ways: as clients get it (the read cache on), with `Cache-Control: no-cache` (every page
 * from PostgreSQL), and while a writer changes a task of that page `--writes` times a second (the cache dropped on
 * every change; the hit ratio is printed). The detail is measured with and without the cache.
 *
 * Uses DATABASE_URL when set, else an embedded PostgreSQL in a temp dir (removed afterwards).
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { createLogger } from '../lib/logger';
import { createPool } from '../lib/db/pool';
import { migrate } from '../lib/db/migrate';
import { loadConfig } from '../lib/config';
import { createMetrics } from '../lib/metrics';
import { resolveKeys } from '../lib/keys';
import { createTemporalHandle } from '../lib/temporal/client';
import { startEmbeddedPostgres } from '../lib/runtime/embeddedPostgres';
import { buildTaskApp } from '../api/task/app';

const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<AutocannonResult>;
interface AutocannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
}

const logger = createLogger('warn');
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    tasks: { type: 'string', default: '10000' },
    serve: { type: 'string' },
    only: { type: 'string' },
    writes: { type: 'string', default: '50' },
  },
});

/** Child mode: serve the Armada task app and the baseline app, print their ports. */
async function serve(databaseUrl: string): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-home-'));
  const config = loadConfig({
    ARMADA_HOME: home,
    ARMADA_API_KEY: 'bench-key-0123456789',
    ARMADA_LOG_LEVEL: 'warn',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
  });
  const pool = createPool(databaseUrl, logger, {
    max: Number(process.env.BENCH_POOL ?? 20),
  });
  const app = await buildTaskApp(
    {
      db: pool,
      config,
      temporal: createTemporalHandle('127.0.0.1:1', 'default'),
      logger,
      keys: resolveKeys(config),
      localUser: 'bench@example.com',
    },
    createMetrics(),
  );
  const armadaPort = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port);

  const baseline = Fastify();
  baseline.get<{ Params: { id: string } }>('/tasks/:id', async (request) => {
    const { rows } = await pool.query('SELECT * FROM tasks WHERE id = $1', [request.params.id]);
    return rows[0];
  });
  // the same work as the list page (20 rows, same order, as JSON), for a like-for-like ratio
  baseline.get('/tasks', async () => {
    const { rows } = await pool.query('SELECT * FROM tasks ORDER BY created_at DESC, id DESC LIMIT 20');
    return rows;
  });
  const baselinePort = Number(new URL(await baseline.listen({ host: '127.0.0.1', port: 0 })).port);
  process.once('SIGTERM', () => process.exit(0)); // a normal exit, so --cpu-prof writes the server's profile
  process.send?.({ armadaPort, baselinePort });
}

async function seed(databaseUrl: string, n: number): Promise<string> {
  const pool = createPool(databaseUrl, logger);
  try {
    await migrate(pool);
    const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-repo-'));
    const projectId = `bench-${Date.now()}`;
    await pool.query(`INSERT INTO projects (id, name, repo_url, git_repo_path) VALUES ($1, $1, $2, $2)`, [projectId, repo]);
    await pool.query(
      `INSERT INTO tasks (id, project_id, title, description, priority, labels, created_at)
       SELECT $1 || '-' || g, $1, 'Task ' || g, 'Benchmark task number ' || g,
              (ARRAY['low','medium','high','critical'])[1 + g % 4], ARRAY['bench', 'l' || (g % 10)],
              now() - (g || ' seconds')::interval
         FROM generate_series(1, $2) AS g`,
      [projectId, n],
    );
    await pool.query('ANALYZE tasks');
    return `${projectId}-${Math.ceil(n / 2)}`;
  } finally {
    await pool.end();
  }
}

interface Measured extends AutocannonResult {
  title: string;
}

async function measure(
  title: string,
  url: string,
  duration: number,
  connections: number,
  headers: Record<string, string> = {},
  post?: { body: string },
): Promise<Measured> {
  const r = await autocannon({
    url,
    duration,
    connections,
    pipelining: 1,
    headers: post ? { ...headers, 'content-type': 'application/json' } : headers,
    ...(post ? { method: 'POST', body: post.body } : {}),
  });
  const line = `${title.padEnd(46)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
  process.stdout.write(`${line}\n`);
  return { ...r, title };
}

/** The read cache's hit/miss/bypass counters of list pages from the server's /metrics. */
async function cacheCounters(armadaPort: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${armadaPort}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^armada_task_read_cache_total\{cache="list",outcome="(\w+)"\} (\d+)/gm)) out[m[1] as string] = Number(m[2]);
  return out;
}

/** Changes one task of the first page `perSecond` times a second (plain SQL, as a worker would) until stopped. */
function startWriter(databaseUrl: string, taskId: string, perSecond: number): { stop(): Promise<number> } {
  const pool = createPool(databaseUrl, logger, { max: 1 });
  let writes = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    pool.query(`UPDATE tasks SET title = 'Task written ' || $2::int, created_at = now() WHERE id = $1`, [taskId, ++writes]).finally(() => {
      busy = false;
    });
  }, 1000 / perSecond);
  return {
    async stop() {
      clearInterval(timer);
      await pool.end();
      return writes;
    },
  };
}

async function main(): Promise<void> {
  if (values.serve) return serve(values.serve);
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  const n = Number(values.tasks);
  const writesPerSecond = Number(values.writes);
  let databaseUrl = process.env.DATABASE_URL;
  let stopPg: (() => Promise<void>) | undefined;
  let pgHome: string | undefined;
  if (!databaseUrl) {
    pgHome = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-pg-'));
    const pg = await startEmbeddedPostgres({
      dataDir: path.join(pgHome, 'pg'),
      port: 20000 + Math.floor(Math.random() * 20000),
      logger,
    });
    databaseUrl = pg.url;
    stopPg = pg.stop;
  }
  const seedStart = Date.now();
  const taskId = await seed(databaseUrl, n);
  const seedSeconds = (Date.now() - seedStart) / 1000;
  const dbUrl = databaseUrl;
  const child = fork(path.join(__dirname, '..', 'bin', 'armada-ts'), [__filename, '--serve', databaseUrl], { stdio: 'inherit' });
  try {
    const ports = await new Promise<{
      armadaPort: number;
      baselinePort: number;
    }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { armadaPort: number; baselinePort: number }));
      child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
    });
    const cpu = os.cpus();
    process.stdout.write(
      `bench/api.ts — ${n} tasks (seeded in ${seedSeconds.toFixed(1)} s), ${connections} connections, ${duration} s each, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, node ${process.version}\n`,
    );
    const base = `http://127.0.0.1:${ports.baselinePort}`;
    const armada = `http://127.0.0.1:${ports.armadaPort}`;
    // warm-up: JIT, pool connections, plan caches
    await autocannon({
      url: `${armada}/api/tasks/${taskId}`,
      duration: 2,
      connections,
    });
    await autocannon({
      url: `${armada}/api/tasks?limit=20`,
      duration: 2,
      connections,
      headers: { 'cache-control': 'no-cache' },
    });
    await autocannon({
      url: `${base}/tasks/${taskId}`,
      duration: 2,
      connections,
    });

    const scenarios: Record<string, () => Promise<Measured>> = {
      single: () => measure('baseline: fastify + pg single row', `${base}/tasks/${taskId}`, duration, connections),
      same20: () => measure('baseline: fastify + pg same 20 rows', `${base}/tasks`, duration, connections),
      detail: () => measure('armada: GET /api/tasks/:id', `${armada}/api/tasks/${taskId}`, duration, connections),
      detailNoCache: () =>
        measure('armada: same, Cache-Control: no-cache', `${armada}/api/tasks/${taskId}`, duration, connections, { 'cache-control': 'no-cache' }),
      list: () => measure('armada: GET /api/tasks?limit=20', `${armada}/api/tasks?limit=20`, duration, connections),
      listNoCache: () =>
        measure('armada: same, Cache-Control: no-cache', `${armada}/api/tasks?limit=20`, duration, connections, { 'cache-control': 'no-cache' }),
      listWrites: async () => {
        const before = await cacheCounters(ports.armadaPort);
        const writer = startWriter(dbUrl, taskId, writesPerSecond);
        const r = await measure(`armada: same, ${writesPerSecond} task writes/s`, `${armada}/api/tasks?limit=20`, duration, connections);
        const writes = await writer.stop();
        const after = await cacheCounters(ports.armadaPort);
        const d = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
        const total = d('hit') + d('miss') + d('bypass');
        process.stdout.write(
          `${''.padEnd(46)} ${writes} writes; cache hit ${d('hit')}, miss ${d('miss')}, bypass ${d('bypass')} (hit ratio ${(d('hit') / Math.max(1, total)).toFixed(3)})\n`,
        );
        return r;
      },
    };
    // writes, opt-in (they add rows): task creation with and without the read cache's NOTIFY trigger, same run
    const projectId = taskId.replace(/-\d+$/, '');
    const create = (title: string) =>
      measure(title, `${armada}/api/tasks`, duration, connections, {}, { body: JSON.stringify({ projectId, title: 'Benchmark create' }) });
    const writeScenarios: Record<string, () => Promise<Measured>> = {
      create: () => create('armada: POST /api/tasks'),
      createNoNotify: async () => {
        const admin = createPool(dbUrl, logger, { max: 1 });
        await admin.query('ALTER TABLE tasks DISABLE TRIGGER tasks_changed_notify');
        try {
          return await create('armada: same, without the cache trigger');
        } finally {
          await admin.query('ALTER TABLE tasks ENABLE TRIGGER tasks_changed_notify');
          await admin.end();
        }
      },
    };
    Object.assign(scenarios, writeScenarios);
    const names = values.only?.split(',') ?? Object.keys(scenarios).filter((k) => !(k in writeScenarios));
    const results: Record<string, Measured> = {};
    for (const name of names) {
      const run = scenarios[name];
      if (!run) throw new Error(`unknown scenario ${name} (one of ${Object.keys(scenarios).join(', ')})`);
      results[name] = await run();
    }
    const ratio = (name: string, against: string) => {
      const r = results[name];
      const b = results[against];
      return r && b ? `${r.title} / ${b.title}: ${(r.requests.average / b.requests.average).toFixed(2)}\n` : '';
    };
    const pairs = [
      ['detail', 'single'],
      ['detailNoCache', 'single'],
      ['list', 'single'],
      ['listNoCache', 'single'],
      ['listWrites', 'single'],
      ['listNoCache', 'same20'],
      ['create', 'createNoNotify'],
    ] as const;
    process.stdout.write(pairs.map(([name, against]) => ratio(name, against)).join(''));
  } finally {
    const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    child.kill('SIGTERM');
    await exited; // the servers go before their database does
    await stopPg?.();
    if (pgHome) fs.rmSync(pgHome, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
