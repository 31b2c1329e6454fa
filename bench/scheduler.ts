/**
 * Scheduler benchmark: schedule lag over real Temporal Schedules. N workflows on `@every <interval>` run a trivial
 * script until at least --runs scheduled executions completed; then it prints the lag distribution (p50/p90/p99/max)
 * of two measures, from the same runs:
 *   - Temporal (baseline): the schedule's `takenAt − scheduledAt` from describe().info.recentActions, i.e. the
 *     server alone starting the workflow;
 *   - Armada: the execution's `startedAt − scheduledAt` (startedAt = when the worker began the run), which is what
 *     armada_scheduler_schedule_lag_seconds observes.
 *
 *   node bin/armada-ts bench/scheduler.ts [--workflows 5] [--interval 1s] [--runs 50]
 *
 * Uses DATABASE_URL / TEMPORAL_ADDRESS when set, else an embedded PostgreSQL and a Temporal dev server in a temp dir.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Runtime } from '@temporalio/worker';
import { buildSchedulerApp } from '../api/scheduler/app';
import { bootstrap, startInfrastructure } from '../cli/runtime';
import { migrate } from '../lib/db/migrate';
import { createPool } from '../lib/db/pool';
import { resolveKeys } from '../lib/keys';
import { createMetrics } from '../lib/metrics';
import { createTemporalHandle } from '../lib/temporal/client';
import { sdkLogger } from '../lib/temporal/sdkLogger';
import { startWorkers } from '../workers/createWorker';

const { freePort } = require('../test/support/ports') as { freePort(): Promise<number> };

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { workflows: { type: 'string', default: '5' }, interval: { type: 'string', default: '1s' }, runs: { type: 'string', default: '50' } },
});
const N = Number(values.workflows);
const RUNS = Number(values.runs);

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

function describe(label: string, lagsMs: number[]): string {
  const s = [...lagsMs].sort((a, b) => a - b);
  const f = (v: number) => `${v.toFixed(0)} ms`;
  return `${label.padEnd(34)} n=${String(s.length).padEnd(4)} p50 ${f(quantile(s, 0.5)).padEnd(8)} p90 ${f(quantile(s, 0.9)).padEnd(8)} p99 ${f(quantile(s, 0.99)).padEnd(8)} max ${f(s[s.length - 1] ?? Number.NaN)}`;
}

async function main(): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-sched-'));
  process.env.ARMADA_HOME = home;
  process.env.ARMADA_API_KEY ??= 'bench-key-0123456789';
  process.env.ARMADA_LOG_LEVEL ??= 'warn';
  process.env.ARMADA_TASK_QUEUE = `bench-${crypto.randomBytes(4).toString('hex')}`;
  fs.writeFileSync(path.join(home, 'config.json'), JSON.stringify({ scheduler: { healthCheckIntervalSeconds: 0 } }));
  const { config: base, logger } = bootstrap();
  const config = { ...base, embedded: { pgPort: await freePort(), temporalPort: await freePort(), temporalUiPort: null } };
  const infra = await startInfrastructure(config, logger);
  const pool = createPool(infra.databaseUrl, logger, { max: 20 });
  await migrate(pool);
  Runtime.install({ logger: sdkLogger(logger), shutdownSignals: [] });
  const metrics = createMetrics();
  const workers = await startWorkers({ config, db: pool, logger, metrics, address: infra.temporalAddress, namespace: config.temporal.namespace, shutdownGraceMs: 2000 });
  const temporal = createTemporalHandle(infra.temporalAddress, config.temporal.namespace);
  const keys = resolveKeys(config);
  const app = await buildSchedulerApp({ db: pool, config, keys, temporal, logger, metrics });
  await app.ready();
  const call = async (method: 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const r = await app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': keys.scheduler } });
    if (r.statusCode >= 300) throw new Error(`${method} ${url}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  const names = Array.from({ length: N }, (_v, i) => `bench-${i}`);
  try {
    const t0 = Date.now();
    for (const name of names) {
      await call('POST', '/api/v1/workflows', { name, schedule: `@every ${values.interval}`, tasks: [{ name: 'noop', type: 'script', script: 'true' }] });
    }
    process.stdout.write(`${N} workflows on @every ${values.interval}; waiting for ${RUNS} scheduled runs…\n`);
    const deadline = Date.now() + 180_000;
    for (;;) {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM scheduler_executions WHERE trigger = 'schedule' AND status = 'completed'`);
      if ((rows[0]?.n ?? 0) >= RUNS) break;
      if (Date.now() > deadline) throw new Error(`only ${rows[0]?.n} runs after 180 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const elapsed = (Date.now() - t0) / 1000;
    for (const name of names) await call('POST', `/api/v1/schedules/${name}/pause`);
    const client = await temporal.client();
    const serverLags: number[] = [];
    for (const name of names) {
      const d = await client.schedule.getHandle(`schedule:${name}`).describe();
      for (const a of d.info.recentActions) serverLags.push(a.takenAt.getTime() - a.scheduledAt.getTime());
    }
    const { rows } = await pool.query<{ lag: number }>(
      `SELECT extract(epoch FROM started_at - scheduled_at) * 1000 AS lag FROM scheduler_executions
        WHERE trigger = 'schedule' AND status = 'completed' AND scheduled_at IS NOT NULL`,
    );
    const armadaLags = rows.map((r) => Number(r.lag));
    const skipped = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM scheduler_executions WHERE status <> 'completed' AND trigger = 'schedule'`);
    process.stdout.write(
      [
        `scheduled runs completed: ${armadaLags.length} in ${elapsed.toFixed(1)} s (${os.cpus().length} CPUs, Temporal dev server on SQLite)`,
        describe('Temporal schedule start (baseline)', serverLags),
        describe('Armada run start (worker picked up)', armadaLags),
        `not completed at pause: ${skipped.rows[0]?.n ?? 0}`,
        '',
      ].join('\n'),
    );
  } finally {
    const client = await temporal.client().catch(() => undefined);
    for (const name of names) await client?.schedule.getHandle(`schedule:${name}`).delete().catch(() => undefined);
    await app.close();
    await workers.stop();
    await temporal.close();
    await pool.end();
    await infra.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);
