/**
 * Scale benchmark: how the cost of bulk work on tasks and of the task service's reads grows with the number of tasks.
 *
 *   node bin/armada-ts bench/scale.ts [--quick] [--bulk 5000,10000,…] [--reads 10000,100000,1000000]
 *                                     [--duration 5] [--connections 4] [--row-triggers] [--repeat 3]
 *
 * 1. Bulk work, for each n of --bulk (default 5k … 1M; --quick stops at 100k): one `INSERT … SELECT` of n tasks, one
 *    `UPDATE tasks SET status` of those n tasks, and deleting them, on the real `tasks` table (its counter and NOTIFY
 *    triggers, its foreign keys; the delete is the project's delete cascading to its tasks) and on a trigger-free copy
 *    (`CREATE TABLE … (LIKE tasks INCLUDING ALL)`: same columns and indexes, no triggers, no foreign keys), pair by pair
 *    in the same run. Prints the times and the ratio real / copy. Sizes up to 100k are run 3 times (median; --repeat sets it for all).
 * 2. Reads, at each table size of --reads (default 10k, 100k, 1M; --quick: 10k, 100k): the real task app in a child
 *    process, `GET /api/tasks?limit=20` and `GET /api/tasks/:id` (50 tasks spread over the table), each with the read
 *    cache and with `Cache-Control: no-cache`, --connections concurrent clients for --duration seconds. Prints p50 and
 *    p99 and the ratio to the 10k figure (the first size).
 *
 * --row-triggers puts back the row-level counter triggers of migration 001 (replaced by 065) first, to measure the
 * "before" curve in the same way (--reads '' skips the reads).
 *
 * Uses DATABASE_URL when set (it adds rows and a table `tasks_baseline` there), else an embedded PostgreSQL in a temp dir.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import { createLogger } from '../lib/logger';
import { createPool } from '../lib/db/pool';
import { migrate } from '../lib/db/migrate';
import { loadConfig } from '../lib/config';
import { createMetrics } from '../lib/metrics';
import { resolveKeys } from '../lib/keys';
import { createTemporalHandle } from '../lib/temporal/client';
import { startEmbeddedPostgres } from '../lib/runtime/embeddedPostgres';
import { buildTaskApp } from '../api/task/app';

const logger = createLogger('warn');
const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    quick: { type: 'boolean', default: false },
    bulk: { type: 'string' },
    reads: { type: 'string' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '4' },
    serve: { type: 'string' },
    'row-triggers': { type: 'boolean', default: false },
    repeat: { type: 'string' },
  },
});
const sizes = (s: string) => s.split(',').filter(Boolean).map((x) => Number(x.replace(/k$/i, '000').replace(/m$/i, '000000')));
const bulkSizes = sizes(values.bulk ?? (values.quick ? '5k,10k,20k,40k,100k' : '5k,10k,20k,40k,100k,200k,500k,1m'));
const readSizes = sizes(values.reads ?? (values.quick ? '10k,100k' : '10k,100k,1m'));
const out = (line: string) => process.stdout.write(`${line}\n`);

/** Child mode: serve the task app on the database, print its port. */
async function serve(databaseUrl: string): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-home-'));
  const config = loadConfig({ ARMADA_HOME: home, ARMADA_API_KEY: 'bench-key-0123456789', ARMADA_LOG_LEVEL: 'warn', TEMPORAL_ADDRESS: '127.0.0.1:1' });
  const pool = createPool(databaseUrl, logger, { max: 20 });
  const app = await buildTaskApp(
    { db: pool, config, temporal: createTemporalHandle('127.0.0.1:1', 'default'), logger, keys: resolveKeys(config), localUser: 'bench@example.com' },
    createMetrics(),
  );
  const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port);
  process.once('SIGTERM', () => process.exit(0));
  process.send?.({ port });
}

/** Tasks $3+1 … $3+$4 of project $2, ids '$1-<g>', statuses and priorities spread, created one second apart. */
const INSERT_SELECT = (table: string) => `
  INSERT INTO ${table} (id, project_id, title, description, status, priority, labels, created_at)
  SELECT $1 || '-' || g, $2, 'Task ' || g, 'Scale benchmark task number ' || g,
         (ARRAY['pending','pending','in_progress','review','completed','failed'])[1 + g % 6],
         (ARRAY['low','medium','high','critical'])[1 + g % 4], ARRAY['bench', 'l' || (g % 10)],
         now() - (g || ' seconds')::interval
    FROM generate_series($3::bigint + 1, $3::bigint + $4) AS g`;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function newProject(db: Pool, id: string): Promise<void> {
  await db.query(`INSERT INTO projects (id, name, repo_url, git_repo_path) VALUES ($1, $1, '/nonexistent', '/nonexistent')`, [id]);
}

/** The row-level counter triggers of migration 001, which migration 065 replaced: the "before" of --row-triggers. */
const ROW_TRIGGERS = `
  DROP TRIGGER tasks_count_ins ON tasks;
  DROP TRIGGER tasks_count_upd ON tasks;
  DROP TRIGGER tasks_count_del ON tasks;
  CREATE FUNCTION task_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      UPDATE task_counts SET n = n - 1 WHERE project_id = OLD.project_id AND status = OLD.status;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      INSERT INTO task_counts (project_id, status, n) VALUES (NEW.project_id, NEW.status, 1)
      ON CONFLICT (project_id, status) DO UPDATE SET n = task_counts.n + 1;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER tasks_count_ins AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION task_counts_apply();
  CREATE TRIGGER tasks_count_del AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION task_counts_apply();
  CREATE TRIGGER tasks_count_upd AFTER UPDATE OF status, project_id ON tasks
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION task_counts_apply();`;

async function bulk(db: Pool): Promise<void> {
  if (values['row-triggers']) await db.query(ROW_TRIGGERS);
  await db.query('DROP TABLE IF EXISTS tasks_baseline');
  await db.query('CREATE TABLE tasks_baseline (LIKE tasks INCLUDING ALL)');
  // vacuum is ours between sizes, so autovacuum does not land inside one side's timing
  await db.query('ALTER TABLE tasks SET (autovacuum_enabled = false)');
  await db.query('ALTER TABLE tasks_baseline SET (autovacuum_enabled = false)');
  const triggers = await db.query<{ t: string }>(
    `SELECT tgname || ' (' || CASE WHEN tgtype & 1 = 1 THEN 'row' ELSE 'statement' END || ')' AS t
       FROM pg_trigger WHERE tgrelid = 'tasks'::regclass AND NOT tgisinternal ORDER BY tgname`,
  );
  out(`triggers on tasks: ${triggers.rows.map((r) => r.t).join(', ')}; tasks_baseline has none and no foreign keys`);
  out('');
  out('bulk work: seconds (real tasks table / trigger-free copy = ratio)');
  out(`${'n'.padStart(9)}  ${'INSERT … SELECT'.padEnd(28)}  ${'UPDATE SET status'.padEnd(28)}  ${'delete (project cascade)'.padEnd(28)}`);
  const worst = { insert: 0, update: 0 };
  let run = 0;
  try {
    for (const n of bulkSizes) {
      const times = { insert: [[], []], update: [[], []], delete: [[], []] } as Record<'insert' | 'update' | 'delete', [number[], number[]]>;
      const repeats = values.repeat ? Number(values.repeat) : n <= 100_000 ? 3 : 1;
      for (let r = 0; r < repeats; r++) {
        const project = `scale-${n}-${run++}`;
        await newProject(db, project);
        // each pair back to back, so both sides see the same machine
        times.insert[1].push(await timed(() => db.query(INSERT_SELECT('tasks_baseline'), [project, project, 0, n])));
        times.insert[0].push(await timed(() => db.query(INSERT_SELECT('tasks'), [project, project, 0, n])));
        const update = (table: string) => `UPDATE ${table} SET status = 'in_progress', updated_at = now() WHERE project_id = $1`;
        times.update[1].push(await timed(() => db.query(update('tasks_baseline'), [project])));
        times.update[0].push(await timed(() => db.query(update('tasks'), [project])));
        times.delete[1].push(await timed(() => db.query('DELETE FROM tasks_baseline WHERE project_id = $1', [project])));
        times.delete[0].push(await timed(() => db.query('DELETE FROM projects WHERE id = $1', [project])));
        await db.query('VACUUM tasks, tasks_baseline, task_counts');
      }
      const cell = (k: 'insert' | 'update' | 'delete') => {
        const real = median(times[k][0]);
        const base = median(times[k][1]);
        if (k !== 'delete') worst[k] = Math.max(worst[k], real / base);
        return `${real.toFixed(3)} / ${base.toFixed(3)} = ${(real / base).toFixed(2)}`.padEnd(28);
      };
      out(`${String(n).padStart(9)}  ${cell('insert')}  ${cell('update')}  ${cell('delete')}`);
    }
  } finally {
    await db.query('DROP TABLE IF EXISTS tasks_baseline');
    await db.query('ALTER TABLE tasks RESET (autovacuum_enabled)');
  }
  out(`worst ratio: insert ${worst.insert.toFixed(2)}, update ${worst.update.toFixed(2)} (target: within 2)`);
}

interface Latency {
  p50: number;
  p99: number;
  count: number;
  /** x-armada-cache of the answers: hit, miss, bypass */
  cache: Record<string, number>;
}

/** `connections` clients each sending requests one after another for `seconds`; latency of each, in ms. */
async function load(urls: string[], headers: Record<string, string>, seconds: number, connections: number): Promise<Latency> {
  const samples: number[] = [];
  const until = Date.now() + seconds * 1000;
  let next = 0;
  let failed = 0;
  const cache: Record<string, number> = {};
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) {
        const url = urls[next++ % urls.length] as string;
        const t0 = process.hrtime.bigint();
        const r = await fetch(url, { headers });
        await r.arrayBuffer();
        samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (r.status !== 200) failed++;
        const c = r.headers.get('x-armada-cache') ?? 'none';
        cache[c] = (cache[c] ?? 0) + 1;
      }
    }),
  );
  if (failed) throw new Error(`${failed} of ${samples.length} requests to ${urls[0]} failed`);
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] as number;
  return { p50: at(0.5), p99: at(0.99), count: samples.length, cache };
}

async function reads(db: Pool, databaseUrl: string): Promise<void> {
  const seconds = Number(values.duration);
  const connections = Number(values.connections);
  const child = fork(path.join(__dirname, '..', 'bin', 'armada-ts'), [__filename, '--serve', databaseUrl], { stdio: 'inherit' });
  try {
    const { port } = await new Promise<{ port: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { port: number }));
      child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
    });
    const base = `http://127.0.0.1:${port}/api`;
    out('');
    out(`reads: ${connections} clients × ${seconds} s each, latency in ms (p50 / p99), ratio of p50 and p99 to the first size`);
    const projects = 10;
    for (let p = 0; p < projects; p++) await newProject(db, `reads-${p}`);
    let have = 0;
    const first: Record<string, Latency> = {};
    for (const size of readSizes) {
      const seeded = await timed(async () => {
        // one INSERT … SELECT per project, the tasks spread evenly over ten projects
        const per = Math.ceil((size - have) / projects);
        for (let p = 0; p < projects && per > 0; p++) await db.query(INSERT_SELECT('tasks'), [`reads-${p}`, `reads-${p}`, have / projects, per]);
        have += per * projects;
      });
      await db.query('VACUUM ANALYZE tasks');
      const ids = Array.from({ length: 50 }, (_, i) => `reads-${i % projects}-${1 + Math.floor(((i + 0.5) / 50) * (have / projects))}`);
      const scenarios: [string, string[], Record<string, string>][] = [
        ['list, cached', [`${base}/tasks?limit=20`], {}],
        ['list, no-cache', [`${base}/tasks?limit=20`], { 'cache-control': 'no-cache' }],
        ['detail, cached', ids.map((id) => `${base}/tasks/${id}`), {}],
        ['detail, no-cache', ids.map((id) => `${base}/tasks/${id}`), { 'cache-control': 'no-cache' }],
      ];
      out(`${have} tasks (seeded in ${seeded.toFixed(1)} s):`);
      for (const [name, urls, headers] of scenarios) {
        await load(urls, headers, 1, connections); // warm-up: plans, pool, cache
        const l = await load(urls, headers, seconds, connections);
        first[name] ??= l;
        const f = first[name] as Latency;
        out(
          `  ${name.padEnd(18)} p50 ${l.p50.toFixed(2).padStart(7)}  p99 ${l.p99.toFixed(2).padStart(7)}  (${l.count} requests, ${Object.entries(l.cache).map(([k, v]) => `${k} ${v}`).join(', ')})   vs ${readSizes[0]}: p50 ${(l.p50 / f.p50).toFixed(2)}  p99 ${(l.p99 / f.p99).toFixed(2)}`,
        );
      }
    }
  } finally {
    const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    child.kill('SIGTERM');
    await exited;
  }
}

async function main(): Promise<void> {
  if (values.serve) return serve(values.serve);
  let databaseUrl = process.env.DATABASE_URL;
  let stopPg: (() => Promise<void>) | undefined;
  let pgHome: string | undefined;
  if (!databaseUrl) {
    pgHome = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-pg-'));
    const pg = await startEmbeddedPostgres({ dataDir: path.join(pgHome, 'pg'), port: 20000 + Math.floor(Math.random() * 20000), logger });
    databaseUrl = pg.url;
    stopPg = pg.stop;
  }
  const db = createPool(databaseUrl, logger, { max: 2 });
  try {
    await migrate(db);
    const cpu = os.cpus();
    const version = (await db.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
    out(`bench/scale.ts — ${new Date().toISOString()}, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}, node ${process.version}, PostgreSQL ${version}`);
    await bulk(db);
    await reads(db, databaseUrl);
    out(`load average at the end: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  } finally {
    await db.end();
    await stopPg?.();
    if (pgHome) fs.rmSync(pgHome, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
