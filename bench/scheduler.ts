/**
 * Scheduler benchmark: where the time goes between a schedule's fire time and the flow platform. N workflows, each
 * one flow task on a recording fake platform (bench/recordingPlatform.ts), run on `--schedule` until at least
 * --runs scheduled executions completed. Per run it prints, in milliseconds:
 *   - nominal: the cron time (TemporalScheduledStartTime);
 *   - temporal: Temporal's own schedule start lag, the workflow's start time minus the nominal time;
 *   - then, from the workflow's start (history event times): the first workflow task's start and completion, the
 *     first activity's start (ActivityTaskStarted: eager, it is handed out with the workflow task's completion; else
 *     through matching), the first task's start as the row records it (the flow request is about to leave) and the
 *     platform's receipt of the run request.
 * Then the distributions: Temporal's start lag (the baseline, from the same runs), Armada's share (receipt −
 * workflow start) and its parts, and the whole way (receipt − nominal). p99 is the nearest rank, so with --runs 100 it
 * is the second largest, not the maximum.
 * A second baseline runs beside it on the same server and worker process: a bare Temporal Schedule
 * (bench/bareScheduledFlowWorkflow.ts: one activity that sends the same request with the same HTTP client, nothing of
 * Armada's), on the same spec shifted by 1 s for `@every` schedules so the two do not fire together. Its
 * workflow start → receipt is what Temporal itself costs before a scheduled request can leave.
 *
 * The runs fired in the first --warmup seconds (default 20) after the schedules were created are the warm-up (JIT,
 * first connections, the dev server's first minute): counted in neither Armada's nor the baseline's figures, their
 * count and maxima printed on a line of their own; --runs counts the runs after it.
 * A run whose flow request leaves inside its first workflow task (local-start) shows "first wft started → platform
 * receipt (local)" in place of the activity's dispatch and run.
 *
 *   node bin/armada-ts bench/scheduler.ts [--workflows 1] [--schedule '@every 2s'] [--runs 100] [--timeout 900] [--eager on|off] [--warmup 20]
 *
 * Uses DATABASE_URL / TEMPORAL_ADDRESS when set, else an embedded PostgreSQL and a Temporal dev server in a temp dir
 * (started as `armada start` does, with eager activity execution; `--eager off` starts it with that switched off).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { temporal as proto } from '@temporalio/proto';
import { NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { runRemoteFlow } from '../lib/scheduler/platforms';
import { buildSchedulerApp } from '../api/scheduler/app';
import { bootstrap, startInfrastructure } from '../cli/runtime';
import { startTemporalDevServer } from '../lib/runtime/temporalDevServer';
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
    schedule: { type: 'string', default: '@every 2s' },
    runs: { type: 'string', default: '100' },
    timeout: { type: 'string', default: '900' },
    eager: { type: 'string', default: 'on' },
    warmup: { type: 'string', default: '20' },
  },
});
const N = Number(values.workflows);
const RUNS = Number(values.runs);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const WARMUP_MS = Number(values.warmup) * 1000;
const EventType = proto.api.enums.v1.EventType;
if (values.eager !== 'on' && values.eager !== 'off') throw new Error('--eager is on or off');

function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

function distribution(label: string, lagsMs: number[]): string {
  const s = [...lagsMs].sort((a, b) => a - b);
  const f = (v: number) => `${v.toFixed(1)} ms`;
  return `${label.padEnd(44)} n=${String(s.length).padEnd(4)} p50 ${f(quantile(s, 0.5)).padEnd(10)} p90 ${f(quantile(s, 0.9)).padEnd(10)} p99 ${f(quantile(s, 0.99)).padEnd(10)} max ${f(s[s.length - 1] ?? Number.NaN)}`;
}

const BARE_SCHEDULE = 'bench-bare';
const BARE_INPUT = 'bare';

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
  let config = { ...base, embedded: { pgPort: await freePort(), temporalPort: await freePort(), temporalUiPort: null } };
  // --eager off: the same dev server as startInfrastructure's, with eager activity execution switched off
  const devServer =
    values.eager === 'off' && !config.temporal.address
      ? await startTemporalDevServer({
          cliPath: config.temporal.cliPath,
          toolsDir: config.toolsDir,
          onProgress: (line) => process.stderr.write(`${line}\n`),
          dbFile: path.join(home, 'temporal.db'),
          ip: '127.0.0.1',
          port: config.embedded.temporalPort,
          uiPort: null,
          namespace: config.temporal.namespace,
          logger,
          dynamicConfig: ['system.enableActivityEagerExecution=false'],
        })
      : undefined;
  if (devServer) config = { ...config, temporal: { ...config.temporal, address: devServer.address } };
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
  let bareConnection: NativeConnection | undefined;
  let bareRun: Promise<void> | undefined;
  let stopBare: (() => void) | undefined;
  const platform = await startRecordingPlatform();
  try {
    const source = (await call('POST', '/api/v1/sources', { name: 'bench-platform', source_type: 'flow-builder', url: platform.url, api_key: 'bench-platform-key' })) as { id: string };
    // the bare baseline: its own queue and worker (same process, same server), its schedule shifted by 1 s
    const bareQueue = `${process.env.ARMADA_TASK_QUEUE}-bare`;
    const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
    bareConnection = await NativeConnection.connect({ address: infra.temporalAddress });
    const bareWorker = await Worker.create({
      connection: bareConnection,
      namespace: config.temporal.namespace,
      taskQueue: bareQueue,
      workflowBundle: await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'bareScheduledFlowWorkflow.ts'), logger: quiet }),
      activities: {
        postFlow: async (input: string) => {
          await runRemoteFlow({ sourceType: 'flow-builder', url: platform.url, apiKey: null }, BENCH_FLOW, input, 10_000);
        },
      },
    });
    bareRun = bareWorker.run();
    stopBare = () => bareWorker.shutdown();
    const client = await temporal.client();
    const bareCron = /^@every \S+$/.test(values.schedule) ? `${values.schedule}/1s` : values.schedule;
    await client.schedule.create({
      scheduleId: BARE_SCHEDULE,
      spec: { cronExpressions: [bareCron] },
      action: { type: 'startWorkflow', workflowType: 'bareScheduledFlowWorkflow', workflowId: 'bare', taskQueue: bareQueue, args: [BARE_INPUT] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    });
    const t0 = Date.now();
    for (const name of names) {
      await call('POST', '/api/v1/workflows', { name, schedule: values.schedule, tasks: [{ name: 'flow', type: 'flow', source: source.id, flow: BENCH_FLOW, input: name }] });
    }
    process.stdout.write(`${N} workflows on ${values.schedule}, one flow task each on a recording platform; waiting for ${RUNS} scheduled runs…\n`);
    const deadline = Date.now() + TIMEOUT_MS;
    for (;;) {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM scheduler_executions WHERE trigger = 'schedule' AND status = 'completed' AND scheduled_at >= $1`,
        [new Date(t0 + WARMUP_MS)],
      );
      if ((rows[0]?.n ?? 0) >= RUNS) break;
      if (Date.now() > deadline) throw new Error(`only ${rows[0]?.n} runs after ${TIMEOUT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const elapsed = (Date.now() - t0) / 1000;
    for (const name of names) await call('POST', `/api/v1/schedules/${name}/pause`);
    await client.schedule.getHandle(BARE_SCHEDULE).pause();
    const { rows } = await pool.query<RunRow>(
      `SELECT workflow, temporal_workflow_id, scheduled_at, started_at, tasks->0->>'startedAt' AS first_task_started
         FROM scheduler_executions WHERE trigger = 'schedule' AND status = 'completed' AND scheduled_at IS NOT NULL ORDER BY scheduled_at, workflow`,
    );
    const temporalLags: number[] = [];
    const armadaShares: number[] = [];
    const wholeWay: number[] = [];
    const parts = { wftStart: [] as number[], wft: [] as number[], local: [] as number[], dispatch: [] as number[], activity: [] as number[] };
    // runs fired in the first --warmup seconds (JIT, first connections, the dev server's first minute) are listed
    // but counted in neither Armada's nor the bare baseline's figures
    const warmUntil = t0 + WARMUP_MS;
    const warmUp = { temporal: [] as number[], shares: [] as number[], bare: [] as number[] };
    const lines = [
      `${'nominal'.padEnd(24)} ${'workflow'.padEnd(9)} ${'temporal'.padStart(9)} | from workflow start: ${'wft start'.padStart(9)} ${'wft done'.padStart(9)} ${'act start'.padStart(9)} ${'1st task'.padStart(9)} ${'platform'.padStart(9)}`,
    ];
    const ms = (v: number) => `${v.toFixed(1)}`.padStart(9);
    const eventMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => (t ? Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6 : Number.NaN);
    for (const r of rows) {
      const handle = client.workflow.getHandle(r.temporal_workflow_id);
      const wfStart = (await handle.describe()).startTime.getTime();
      const events = (await handle.fetchHistory()).events ?? [];
      const at = (type: number) => eventMs(events.find((e) => e.eventType === type)?.eventTime) - wfStart;
      // the first workflow task (it schedules the first activity: beginRun, or on older runs after the start's local activity)
      const wftStart = at(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
      const wftDone = at(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
      const actStart = at(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED);
      const receipt = platform.receipts.find((x) => x.input === r.workflow && x.at >= wfStart - 1 && x.at < wfStart + 60_000);
      const nominal = r.scheduled_at.getTime();
      const warm = nominal >= warmUntil;
      (warm ? temporalLags : warmUp.temporal).push(wfStart - nominal);
      const firstTask = r.first_task_started ? Date.parse(r.first_task_started) - wfStart : Number.NaN;
      if (receipt && !warm) warmUp.shares.push(receipt.at - wfStart);
      if (receipt && warm) {
        armadaShares.push(receipt.at - wfStart);
        wholeWay.push(receipt.at - nominal);
        parts.wftStart.push(wftStart);
        parts.wft.push(wftDone - wftStart);
        // local-start: the request leaves inside the first workflow task, before any activity (none, or beginRun's)
        if (Number.isNaN(actStart) || receipt.at - wfStart < actStart) parts.local.push(receipt.at - wfStart - wftStart);
        else {
          parts.dispatch.push(actStart - wftDone);
          parts.activity.push(receipt.at - wfStart - actStart);
        }
      }
      lines.push(
        `${r.scheduled_at.toISOString().padEnd(24)} ${r.workflow.padEnd(9)} ${ms(wfStart - nominal)} | ${''.padEnd(20)} ${ms(wftStart)} ${ms(wftDone)} ${ms(actStart)} ${ms(firstTask)} ${receipt ? ms(receipt.at - wfStart) : '  missing'.padStart(9)}`,
      );
    }
    // the bare baseline's runs: workflow id `bare-<nominal time>`, started by the schedule
    const bareLags: number[] = [];
    const bareShares: number[] = [];
    const bareParts = { wftStart: [] as number[], wft: [] as number[], dispatch: [] as number[], activity: [] as number[] };
    for await (const w of client.workflow.list({ query: `TemporalScheduledById = '${BARE_SCHEDULE}' AND ExecutionStatus = 'Completed'` })) {
      const nominal = Date.parse(w.workflowId.slice('bare-'.length));
      const wfStart = w.startTime.getTime();
      const receipt = platform.receipts.find((x) => x.input === BARE_INPUT && x.at >= wfStart - 1 && x.at < wfStart + 60_000);
      if (nominal < warmUntil) {
        if (receipt) warmUp.bare.push(receipt.at - wfStart);
        continue;
      }
      bareLags.push(wfStart - nominal);
      if (!receipt) continue;
      bareShares.push(receipt.at - wfStart);
      const events = (await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory()).events ?? [];
      const at = (type: number) => eventMs(events.find((e) => e.eventType === type)?.eventTime) - wfStart;
      bareParts.wftStart.push(at(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED));
      bareParts.wft.push(at(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) - at(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED));
      bareParts.dispatch.push(at(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) - at(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED));
      bareParts.activity.push(receipt.at - wfStart - at(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED));
    }
    fs.writeFileSync('/tmp/s22-receipts.json', JSON.stringify(platform.receipts));
    const cacheReads = ((await metrics.registry.getSingleMetric('armada_scheduler_definition_cache_total')?.get())?.values ?? [])
      .map((v) => `${v.labels.outcome} ${v.value}`)
      .join(', ');
    const notCompleted = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM scheduler_executions WHERE status <> 'completed' AND trigger = 'schedule'`);
    process.stdout.write(
      [
        ...lines,
        '',
        `scheduled runs completed: ${rows.length} in ${elapsed.toFixed(1)} s (${os.cpus().length} CPUs, load average ${os.loadavg()[0]?.toFixed(1)}, Temporal dev server on SQLite${config.temporal.address && !devServer ? ` at ${config.temporal.address}` : `, eager activity execution ${values.eager}`})`,
        distribution('Temporal schedule start lag (baseline)', temporalLags),
        distribution("Armada's share (platform receipt − wf start)", armadaShares),
        distribution('  of which: wf start → first wft started', parts.wftStart),
        distribution('  first wft started → completed', parts.wft),
        ...(parts.local.length ? [distribution('  first wft started → platform receipt (local)', parts.local)] : []),
        ...(parts.dispatch.length ? [distribution('  wft completed → activity started', parts.dispatch), distribution('  activity started → platform receipt', parts.activity)] : []),
        distribution('nominal time → platform receipt', wholeWay),
        `bare Temporal baseline (${BARE_SCHEDULE} on ${bareCron}: workflow → one activity → the same request), same server, same run:`,
        distribution('  its schedule start lag', bareLags),
        distribution('  wf start → platform receipt (bare share)', bareShares),
        distribution('  of which: wf start → first wft started', bareParts.wftStart),
        distribution('  first wft started → completed', bareParts.wft),
        distribution('  wft completed → activity started', bareParts.dispatch),
        distribution('  activity started → platform receipt', bareParts.activity),
        `warm-up (runs fired in the first ${WARMUP_MS / 1000} s, not counted above): Armada ${warmUp.shares.length} runs, share max ${Math.max(...warmUp.shares, 0).toFixed(1)} ms, start lag max ${Math.max(...warmUp.temporal, 0).toFixed(1)} ms; bare ${warmUp.bare.length} runs, share max ${Math.max(...warmUp.bare, 0).toFixed(1)} ms`,
        `runs without a platform receipt: ${rows.length - armadaShares.length - warmUp.shares.length}; not completed at pause: ${notCompleted.rows[0]?.n ?? 0}; definition reads (worker cache): ${cacheReads || 'none counted'}`,
        '',
      ].join('\n'),
    );
  } finally {
    const client = await temporal.client().catch(() => undefined);
    for (const name of names) await client?.schedule.getHandle(`schedule:${name}`).delete().catch(() => undefined);
    await client?.schedule.getHandle(BARE_SCHEDULE).delete().catch(() => undefined);
    stopBare?.();
    await bareRun?.catch(() => undefined);
    await bareConnection?.close();
    await platform.close();
    await app.close();
    await workers.stop();
    await temporal.close();
    await pool.end();
    await infra.stop();
    await devServer?.stop();
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
