/**
 * Scheduler benchmark: where the time goes between a schedule's fire time and the flow platform. N workflows, each
 * one flow task on a recording fake platform (bench/recordingPlatform.ts), run on `--schedule` until at least
 * --runs scheduled executions completed. Per run it prints, in milliseconds:
 *   - nominal: the cron time (TemporalScheduledStartTime);
 *   - temporal: Temporal's own schedule start lag, the workflow's start time minus the nominal time;
 *   - then, from the workflow's start: Armada's execution start (the row's startedAt: the run's first workflow task),
 *     the first task's start (its activity began) and the platform's receipt of the run request.
 * Then the distributions: Temporal's start lag (the baseline, from the same runs), Armada's share (receipt −
 * workflow start) and the whole way (receipt − nominal).
 *
 *   node bin/armada-ts bench/scheduler.ts [--workflows 1] [--schedule '@every 5s'] [--runs 30] [--timeout 900]
 *
 * Uses DATABASE_URL / TEMPORAL_ADDRESS when set, else an embedded PostgreSQL and a Temporal dev server in a temp dir.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { temporal as proto } from '@temporalio/proto';
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
import { BENCH_FLOW, startRecordingPlatform } from './recordingPlatform';

const { freePort } = require('../test/support/ports') as { freePort(): Promise<number> };

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    workflows: { type: 'string', default: '1' },
    schedule: { type: 'string', default: '@every 5s' },
    runs: { type: 'string', default: '30' },
    timeout: { type: 'string', default: '900' },
  },
});
const N = Number(values.workflows);
const RUNS = Number(values.runs);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const WFT_COMPLETED = proto.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

function distribution(label: string, lagsMs: number[]): string {
  const s = [...lagsMs].sort((a, b) => a - b);
  const f = (v: number) => `${v.toFixed(1)} ms`;
  return `${label.padEnd(44)} n=${String(s.length).padEnd(4)} p50 ${f(quantile(s, 0.5)).padEnd(10)} p90 ${f(quantile(s, 0.9)).padEnd(10)} p99 ${f(quantile(s, 0.99)).padEnd(10)} max ${f(s[s.length - 1] ?? Number.NaN)}`;
}

interface RunRow {
  workflow: string;
  temporal_workflow_id: string;
  scheduled_at: Date;
  started_at: Date;
  first_task_started: string | null;
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
  const platform = await startRecordingPlatform();
  try {
    const source = (await call('POST', '/api/v1/sources', { name: 'bench-platform', source_type: 'flow-builder', url: platform.url, api_key: 'bench-platform-key' })) as { id: string };
    const t0 = Date.now();
    for (const name of names) {
      await call('POST', '/api/v1/workflows', { name, schedule: values.schedule, tasks: [{ name: 'flow', type: 'flow', source: source.id, flow: BENCH_FLOW, input: name }] });
    }
    process.stdout.write(`${N} workflows on ${values.schedule}, one flow task each on a recording platform; waiting for ${RUNS} scheduled runs…\n`);
    const deadline = Date.now() + TIMEOUT_MS;
    for (;;) {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM scheduler_executions WHERE trigger = 'schedule' AND status = 'completed'`);
      if ((rows[0]?.n ?? 0) >= RUNS) break;
      if (Date.now() > deadline) throw new Error(`only ${rows[0]?.n} runs after ${TIMEOUT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const elapsed = (Date.now() - t0) / 1000;
    for (const name of names) await call('POST', `/api/v1/schedules/${name}/pause`);
    const client = await temporal.client();
    const { rows } = await pool.query<RunRow>(
      `SELECT workflow, temporal_workflow_id, scheduled_at, started_at, tasks->0->>'startedAt' AS first_task_started
         FROM scheduler_executions WHERE trigger = 'schedule' AND status = 'completed' AND scheduled_at IS NOT NULL ORDER BY scheduled_at, workflow`,
    );
    const temporalLags: number[] = [];
    const armadaShares: number[] = [];
    const wholeWay: number[] = [];
    const lines = [
      `${'nominal'.padEnd(24)} ${'workflow'.padEnd(9)} ${'temporal'.padStart(9)} | from workflow start: ${'execution'.padStart(9)} ${'wft done'.padStart(9)} ${'1st task'.padStart(9)} ${'platform'.padStart(9)}`,
    ];
    const ms = (v: number) => `${v.toFixed(1)}`.padStart(9);
    for (const r of rows) {
      const handle = client.workflow.getHandle(r.temporal_workflow_id);
      const wfStart = (await handle.describe()).startTime.getTime();
      // the first workflow task's completion: the start's local activity done and the first task's activity scheduled
      const firstWftDone = (await handle.fetchHistory()).events?.find((e) => e.eventType === WFT_COMPLETED)?.eventTime;
      const wftDone = firstWftDone ? Number(firstWftDone.seconds) * 1000 + Math.floor((firstWftDone.nanos ?? 0) / 1e6) : Number.NaN;
      const receipt = platform.receipts.find((x) => x.input === r.workflow && x.at >= wfStart - 1 && x.at < wfStart + 60_000);
      const nominal = r.scheduled_at.getTime();
      temporalLags.push(wfStart - nominal);
      const firstTask = r.first_task_started ? Date.parse(r.first_task_started) : Number.NaN;
      if (receipt) {
        armadaShares.push(receipt.at - wfStart);
        wholeWay.push(receipt.at - nominal);
      }
      lines.push(
        `${r.scheduled_at.toISOString().padEnd(24)} ${r.workflow.padEnd(9)} ${ms(wfStart - nominal)} | ${''.padEnd(20)} ${ms(r.started_at.getTime() - wfStart)} ${ms(wftDone - wfStart)} ${ms(firstTask - wfStart)} ${receipt ? ms(receipt.at - wfStart) : '  missing'.padStart(9)}`,
      );
    }
    const notCompleted = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM scheduler_executions WHERE status <> 'completed' AND trigger = 'schedule'`);
    process.stdout.write(
      [
        ...lines,
        '',
        `scheduled runs completed: ${rows.length} in ${elapsed.toFixed(1)} s (${os.cpus().length} CPUs, load average ${os.loadavg()[0]?.toFixed(1)}, Temporal dev server on SQLite)`,
        distribution('Temporal schedule start lag (baseline)', temporalLags),
        distribution("Armada's share (platform receipt − wf start)", armadaShares),
        distribution('nominal time → platform receipt', wholeWay),
        `runs without a platform receipt: ${rows.length - armadaShares.length}; not completed at pause: ${notCompleted.rows[0]?.n ?? 0}`,
        '',
      ].join('\n'),
    );
  } finally {
    const client = await temporal.client().catch(() => undefined);
    for (const name of names) await client?.schedule.getHandle(`schedule:${name}`).delete().catch(() => undefined);
    await platform.close();
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
