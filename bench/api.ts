/**
 * Task-service read benchmark (autocannon): GET /api/tasks/:id and GET /api/tasks?limit=20 on 10k seeded tasks,
 * against a bare Fastify + pg single-row select (the baseline) and a bare Fastify + pg select of the same 20
 * rows (same work as the list page), both measured in the same run. The servers run in a child process so the
 * load generator does not share their event loop.
 *
 *   node bin/armada-ts bench/api.ts [--duration 10] [--connections 32] [--tasks 10000]
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
  },
});

/** Child mode: serve the Armada task app and the baseline app, print their ports. */
async function serve(databaseUrl: string): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-home-'));
  const config = loadConfig({ ARMADA_HOME: home, ARMADA_API_KEY: 'bench-key-0123456789', ARMADA_LOG_LEVEL: 'warn', TEMPORAL_ADDRESS: '127.0.0.1:1' });
  const pool = createPool(databaseUrl, logger, { max: 20 });
  const app = await buildTaskApp(
    { db: pool, config, temporal: createTemporalHandle('127.0.0.1:1', 'default'), logger, keys: resolveKeys(config), localUser: 'bench@example.com' },
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

async function measure(title: string, url: string, duration: number, connections: number): Promise<AutocannonResult> {
  const r = await autocannon({ url, duration, connections, pipelining: 1 });
  const line = `${title.padEnd(38)} ${r.requests.average.toFixed(0).padStart(7)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(4)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
  process.stdout.write(`${line}\n`);
  return r;
}

async function main(): Promise<void> {
  if (values.serve) return serve(values.serve);
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  const n = Number(values.tasks);
  let databaseUrl = process.env.DATABASE_URL;
  let stopPg: (() => Promise<void>) | undefined;
  let pgHome: string | undefined;
  if (!databaseUrl) {
    pgHome = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-pg-'));
    const pg = await startEmbeddedPostgres({ dataDir: path.join(pgHome, 'pg'), port: 20000 + Math.floor(Math.random() * 20000), logger });
    databaseUrl = pg.url;
    stopPg = pg.stop;
  }
  const taskId = await seed(databaseUrl, n);
  const child = fork(path.join(__dirname, '..', 'bin', 'armada-ts'), [__filename, '--serve', databaseUrl], { stdio: 'inherit' });
  try {
    const ports = await new Promise<{ armadaPort: number; baselinePort: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { armadaPort: number; baselinePort: number }));
      child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
    });
    const cpu = os.cpus();
    process.stdout.write(`bench/api.ts — ${n} tasks, ${connections} connections, ${duration} s each, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, node ${process.version}\n`);
    // warm-up: JIT, pool connections, plan caches
    await autocannon({ url: `http://127.0.0.1:${ports.armadaPort}/api/tasks/${taskId}`, duration: 2, connections });
    await autocannon({ url: `http://127.0.0.1:${ports.baselinePort}/tasks/${taskId}`, duration: 2, connections });
    const base = await measure('baseline: fastify + pg single row', `http://127.0.0.1:${ports.baselinePort}/tasks/${taskId}`, duration, connections);
    const base20 = await measure('baseline: fastify + pg same 20 rows', `http://127.0.0.1:${ports.baselinePort}/tasks`, duration, connections);
    const one = await measure('armada: GET /api/tasks/:id', `http://127.0.0.1:${ports.armadaPort}/api/tasks/${taskId}`, duration, connections);
    const list = await measure('armada: GET /api/tasks?limit=20', `http://127.0.0.1:${ports.armadaPort}/api/tasks?limit=20`, duration, connections);
    const ratio = (r: AutocannonResult) => (r.requests.average / base.requests.average).toFixed(2);
    process.stdout.write(`ratio vs the single-row baseline (req/s): GET /api/tasks/:id ${ratio(one)}   GET /api/tasks?limit=20 ${ratio(list)}\n`);
    process.stdout.write(`ratio vs the same-20-rows baseline (req/s): GET /api/tasks?limit=20 ${(list.requests.average / base20.requests.average).toFixed(2)}\n`);
  } finally {
    child.kill('SIGTERM');
    await stopPg?.();
    if (pgHome) fs.rmSync(pgHome, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
