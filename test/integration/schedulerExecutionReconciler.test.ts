/**
 * Executions Temporal has no run for are failed by the scheduler API's reconciler (docs/scheduler.md#executions-without-a-run),
 * and nothing else is. A manual run writes its row, then starts its Temporal run; the tests cut a real run request
 * between the two, on a PostgreSQL of this file's own (test/support/ownPostgres.ts):
 * - `armada api --service scheduler` as its own process, reaching Temporal through a TCP proxy that holds every byte
 *   from the run request on, killed (SIGKILL) once the row is committed: the start never reached Temporal;
 * - PostgreSQL frozen (SIGSTOP) while the row's insert waits for a lock, the request released with "outcome unknown"
 *   (lib/db/releasedWhenDown.ts), and the insert applied once the server runs again: no start was ever sent.
 * Both rows end `failed` with the reason, through the API, and the fake platform never got their flow; a run waiting
 * for a worker (its workflow exists, none of its tasks began) is left alone and runs once when a worker comes; while
 * the reconciler cannot reach Temporal the orphan is left `running`, and failed once Temporal answers. Two
 * reconcilers at once (two API processes) fail an orphan once, with one log line; a run that began and whose Temporal
 * run is gone (a row written as the run writes it, under a workflow id Temporal does not have) fails its running task.
 * A start Temporal holds (TCP proxy) past the grace: the row is failed meanwhile, and the request answers 503, not a
 * 200 naming a run that ends at once without running (before: 200).
 * A run terminated in Temporal by hand while a task runs (no workflow code runs, so nothing writes its end): failed
 * with "terminated", counted in armada_scheduler_executions_reconciled_total (before: running until retention).
 *
 * Before: both rows stayed `running` for ever (nothing looked for executions without a run).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { Client } from 'pg';
import { buildSchedulerApp } from '../../api/scheduler/app';
import { NEVER_STARTED, RUN_GONE_TASK, runStopped, runStoppedTask, startExecutionReconciler } from '../../api/scheduler/executionReconciler';
import { buildService } from '../../api/services';
import { POSTGRES_OUTCOME_UNKNOWN } from '../../lib/db/releasedWhenDown';
import { insertManualExecution, upsertExecution } from '../../lib/db/schedulerExecutions';
import { createLogger } from '../../lib/logger';
import { createServiceMetrics, type Metrics } from '../../lib/metrics';
import { createDependencyState, type DependencyState } from '../../lib/runtime/dependencies';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { spawnApi } from '../support/apiProcess';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { env, eventually, logger, startStackWorkers, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { closeSchedulerStack } from '../support/schedulerStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';
import type { RunningWorkers } from '../../workers/createWorker';

jest.setTimeout(300_000);

/** The reconciler's grace in this file: it looks an execution up once it is 3 s old, every 1.5 s. */
const RECONCILE_AFTER_SECONDS = 3;

let home: string;
let pg: OwnPostgres;
let stack: TestStack;
let fake: FakeFlowBuilder;
let dependencies: DependencyState;
/** the in-process scheduler API's way to Temporal: its reconciler is the one under test */
let temporalProxy: TcpProxy;
let temporal: TemporalHandle;
let app: FastifyInstance;
/** the in-process API's metrics: the reconciler's counter is read from them */
let metrics: Metrics;
let thaw: (() => void) | undefined;
const lines: { level: number; msg: string; executionId?: string }[] = [];
const spawned: ChildProcess[] = [];
const proxies: TcpProxy[] = [];
let laterWorkers: RunningWorkers | undefined;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-reconcile-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  stack = await startTestStack({
    services: [],
    worker: true,
    databaseUrl: pg.url,
    file: { scheduler: { healthCheckIntervalSeconds: 0, reconcileAfterSeconds: RECONCILE_AFTER_SECONDS } },
  });
  fake = await startFakeFlowBuilder();
  temporalProxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  temporal = createTemporalHandle(temporalProxy.address, stack.config.temporal.namespace);
  dependencies = createDependencyState(logger);
  metrics = createServiceMetrics();
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  app = await buildService('scheduler', {
    db: stack.db,
    config: stack.config,
    keys: stack.keys,
    temporal,
    logger: createLogger('info', 'test', sink),
    metrics,
    dependencies,
  });
  await app.ready();
}, 240_000);

afterAll(async () => {
  thaw?.();
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const p of proxies) await p.close();
  await laterWorkers?.stop();
  await app?.close();
  await temporal?.close();
  await temporalProxy?.close();
  await fake?.close();
  if (stack) await closeSchedulerStack(stack);
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) => app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The flow requests the fake platform got with this input. */
const flowsSent = (input: string) =>
  fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}` && (r.body as { input_value?: unknown })?.input_value === input).length;

let sourceId: string | undefined;
/** A workflow of one flow task on the fake platform, sending `input`. */
async function flowWorkflow(name: string, input: string): Promise<void> {
  if (!sourceId) {
    const s = await inject('POST', '/api/v1/sources', { name: 'fake', source_type: 'langflow', url: fake.url });
    expect(s.statusCode).toBe(201);
    sourceId = s.json().id as string;
  }
  const w = await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'f', type: 'flow', source: sourceId, flow: FAKE_FLOWS.summarise.id, input }] });
  expect(w.statusCode).toBe(201);
}

/** The id of the one execution row of `workflow`, once there is one. */
const rowOf = (workflow: string, limitMs = 60_000) =>
  eventually(async () => (await stack.db.query<{ id: string }>('SELECT id FROM scheduler_executions WHERE workflow = $1', [workflow])).rows[0]?.id, limitMs, 50);

const execution = async (id: string) => (await inject('GET', `/api/v1/executions/${id}`)).json();

/** Whether Temporal has a workflow `execution:<id>` (asked directly, not through the proxy). */
async function inTemporal(id: string): Promise<boolean> {
  const client = await stack.temporal.client();
  try {
    await client.workflow.getHandle(`execution:${id}`).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

test('the API killed (SIGKILL) between the row and the start: the execution is failed as never started; a run waiting for a worker is left alone and runs once', async () => {
  await flowWorkflow('waits', 'waits');
  await flowWorkflow('killed', 'killed');

  // a run whose Temporal workflow exists but which no worker has taken: older than the grace, none of its tasks begun
  await stack.workers?.stop();
  const waiting = await inject('POST', '/api/v1/workflows/waits/run');
  expect(waiting.statusCode).toBe(200);
  const waitingId = waiting.json().executionId as string;
  expect(await inTemporal(waitingId)).toBe(true);

  // another scheduler API, as its own process, whose Temporal connection goes through a proxy of its own
  const apiProxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxies.push(apiProxy);
  const apiHome = path.join(home, 'api');
  fs.mkdirSync(apiHome);
  // its own reconciler would look only after an hour: the in-process API's is the one that must act
  fs.writeFileSync(path.join(apiHome, 'config.json'), JSON.stringify({ scheduler: { healthCheckIntervalSeconds: 0, reconcileAfterSeconds: 3600 } }));
  const api = await spawnApi({
    home: apiHome,
    databaseUrl: pg.url,
    temporalAddress: apiProxy.address,
    services: ['scheduler'],
    configPath: path.join(apiHome, 'config.json'),
    env: { ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue },
  });
  spawned.push(api.child);
  apiProxy.setMode('hold'); // from here its start request stays in the proxy
  const request = fetch(`${api.base('scheduler')}/api/v1/workflows/killed/run`, { method: 'POST', headers: { 'x-api-key': TEST_API_KEY } }).then(
    (r) => r.status,
    () => 'no answer',
  );
  const killedId = await rowOf('killed'); // committed: the API is now waiting for Temporal
  const exited = new Promise((r) => api.child.once('exit', r));
  api.child.kill('SIGKILL');
  await exited;
  await apiProxy.close(); // what it held is dropped: the start never reaches Temporal
  expect(await request).toBe('no answer');

  const failed = await eventually(async () => {
    const e = await execution(killedId);
    return e.status !== 'running' && e;
  }, 60_000, 200);
  expect(failed).toMatchObject({ status: 'failed', error: NEVER_STARTED });
  expect(failed.tasks.map((t: { status: string }) => t.status)).toEqual(['pending']);
  const logs = (await inject('GET', `/api/v1/executions/${killedId}/logs`)).json().logs;
  expect(logs).toEqual([expect.objectContaining({ level: 'error', message: NEVER_STARTED })]);
  expect(lines.some((l) => l.level === 40 && l.executionId === killedId && /never started/.test(l.msg))).toBe(true);
  expect(await inTemporal(killedId)).toBe(false);

  // a few more passes: the waiting run (older, looked up before the orphan in every walk) is still as it was
  await sleep(4000);
  const still = await execution(waitingId);
  expect(still).toMatchObject({ status: 'running', error: null });
  expect(still.tasks.map((t: { status: string }) => t.status)).toEqual(['pending']);
  expect(lines.some((l) => l.executionId === waitingId)).toBe(false);

  // a worker comes: the waiting run runs, once; the killed request's flow was never sent
  laterWorkers = await startStackWorkers(stack);
  const done = await eventually(async () => {
    const e = await execution(waitingId);
    return e.status !== 'running' && e;
  }, 60_000, 200);
  expect(done).toMatchObject({ status: 'completed', error: null });
  expect(flowsSent('waits')).toBe(1);
  expect(flowsSent('killed')).toBe(0);
});

test('a run whose insert PostgreSQL applied after answering "outcome unknown": left running while Temporal cannot be asked, then failed as never started', async () => {
  await flowWorkflow('unknown', 'unknown');
  const admin = new Client({ connectionString: pg.url });
  await admin.connect();
  try {
    // the workflow's row locked, so the run's insert (FOR KEY SHARE of it) waits with the server
    await admin.query('BEGIN');
    await admin.query(`SELECT 1 FROM scheduler_workflows WHERE name = 'unknown' FOR UPDATE`);
    const answer = inject('POST', '/api/v1/workflows/unknown/run');
    await eventually(
      async () =>
        ((await stack.db.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO scheduler_executions%'`)).rowCount ?? 0) > 0,
      30_000,
      20,
    );
    thaw = pg.freeze();
    dependencies.markDown('postgres', 'frozen (test)'); // as the probes do a few seconds into a freeze
    const released = await answer;
    expect(released.statusCode).toBe(503);
    expect(released.json()).toEqual({ detail: POSTGRES_OUTCOME_UNKNOWN });

    temporalProxy.setMode('refuse'); // the reconciler cannot ask Temporal from here on
    thaw();
    thaw = undefined;
    dependencies.markUp('postgres');
    await admin.query('ROLLBACK'); // the lock goes: the insert the server still had is applied
  } finally {
    await admin.end();
  }
  const id = await rowOf('unknown');
  expect((await execution(id)).status).toBe('running');

  // the row is older than the grace; passes run and find Temporal unreachable, and fail nothing
  await eventually(async () => lines.some((l) => l.level === 40 && /Temporal cannot be reached/.test(l.msg)), 60_000, 100);
  await sleep(5000);
  expect(await execution(id)).toMatchObject({ status: 'running', error: null });

  temporalProxy.setMode('forward');
  const failed = await eventually(async () => {
    const e = await execution(id);
    return e.status !== 'running' && e;
  }, 60_000, 200);
  expect(failed).toMatchObject({ status: 'failed', error: NEVER_STARTED });
  expect(await inTemporal(id)).toBe(false);
  expect(flowsSent('unknown')).toBe(0);
});

test('two reconcilers (two API processes) on one execution without a run: it is failed once, with one log line', async () => {
  await flowWorkflow('twice', 'twice');
  const w = (await stack.db.query<{ id: string }>(`SELECT id FROM scheduler_workflows WHERE name = 'twice'`)).rows[0];
  // the row a run request writes before its start, with no start after it (as a request cut short leaves it)
  const id = crypto.randomUUID();
  const startedAt = new Date(Date.now() - 60_000).toISOString();
  const tasks = [{ name: 'f', type: 'flow' as const, status: 'pending' as const, startedAt: null, completedAt: null, output: '' }];
  expect(await insertManualExecution(stack.db, { id, workflow: 'twice', workflowId: w?.id as string, temporalWorkflowId: `execution:${id}`, startedAt, tasks })).toBe(true);
  const said: { msg: string; executionId?: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) said.push(JSON.parse(l));
      done();
    },
  });
  const deps = { db: stack.db, config: stack.config, temporal: stack.temporal, logger: createLogger('info', 'test', sink), metrics: createServiceMetrics() };
  const reconcilers = [startExecutionReconciler(deps), startExecutionReconciler(deps)];
  try {
    await Promise.all(reconcilers.map((r) => r.runOnce()));
    await Promise.all(reconcilers.map((r) => r.runOnce()));
  } finally {
    await Promise.all(reconcilers.map((r) => r.stop()));
  }
  expect(await execution(id)).toMatchObject({ status: 'failed', error: NEVER_STARTED });
  expect((await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs).toEqual([expect.objectContaining({ level: 'error', message: NEVER_STARTED })]);
  // the file's API runs one too: the three said it once between them
  const saidOnce = [...said, ...lines].filter((l) => l.executionId === id && /never started/.test(l.msg));
  expect(saidOnce).toHaveLength(1);
});

test('a run that began and whose Temporal run is gone (Temporal lost it): failed, its running task failed, the rest skipped', async () => {
  const created = await inject('POST', '/api/v1/workflows', {
    name: 'lost',
    tasks: [
      { name: 'a', type: 'script', script: 'true' },
      { name: 'b', type: 'script', script: 'true' },
      { name: 'c', type: 'script', script: 'true' },
    ],
  });
  expect(created.statusCode).toBe(201);
  const w = (await stack.db.query<{ id: string }>(`SELECT id FROM scheduler_workflows WHERE name = 'lost'`)).rows[0];
  // the row as the run writes it while its second task runs, under a workflow id Temporal does not have
  const id = crypto.randomUUID();
  const at = (s: number) => new Date(Date.now() - s * 1000).toISOString();
  const written = await upsertExecution(stack.db, {
    id,
    workflow: 'lost',
    workflowId: w?.id,
    temporalWorkflowId: `execution:${id}`,
    trigger: 'manual',
    status: 'running',
    scheduledAt: null,
    startedAt: at(60),
    completedAt: null,
    tasks: [
      { name: 'a', type: 'script', status: 'completed', startedAt: at(60), completedAt: at(50), output: 'done\n' },
      { name: 'b', type: 'script', status: 'running', startedAt: at(50), completedAt: null, output: '' },
      { name: 'c', type: 'script', status: 'pending', startedAt: null, completedAt: null, output: '' },
    ],
    error: null,
  });
  expect(written.outcome).toBe('written');
  const failed = await eventually(async () => {
    const e = await execution(id);
    return e.status !== 'running' && e;
  }, 60_000, 200);
  expect(failed).toMatchObject({ status: 'failed', error: `Task b failed: ${RUN_GONE_TASK}` });
  expect(failed.tasks).toEqual([
    expect.objectContaining({ name: 'a', status: 'completed', output: 'done\n', error: null }),
    expect.objectContaining({ name: 'b', status: 'failed', error: RUN_GONE_TASK, completedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) }),
    expect.objectContaining({ name: 'c', status: 'skipped', startedAt: null, completedAt: null }),
  ]);
  expect((await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs).toEqual([expect.objectContaining({ level: 'error', message: `Task b failed: ${RUN_GONE_TASK}` })]);
  expect(lines.some((l) => l.level === 40 && l.executionId === id && /no longer exists/.test(l.msg))).toBe(true);
});

/** `armada_scheduler_executions_reconciled_total{reason}` of the file's API. */
async function reconciledCount(reason: string): Promise<number> {
  const m = (await metrics.registry.getSingleMetric('armada_scheduler_executions_reconciled_total')?.get())?.values ?? [];
  return m.find((v) => v.labels.reason === reason)?.value ?? 0;
}

test('a run terminated in Temporal by hand while a task runs: stopped, saying it was terminated in Temporal and why, its running task stopped, the rest skipped; counted', async () => {
  const created = await inject('POST', '/api/v1/workflows', {
    name: 'terminated',
    tasks: [
      { name: 'slow', type: 'script', script: 'sleep 60' },
      { name: 'after', type: 'script', script: 'true' },
    ],
  });
  expect(created.statusCode).toBe(201);
  const before = await reconciledCount('run_closed');
  const run = await inject('POST', '/api/v1/workflows/terminated/run');
  expect(run.statusCode).toBe(200);
  const id = run.json().executionId as string;
  await eventually(async () => (await execution(id)).tasks?.[0]?.status === 'running', 60_000, 200);
  const temporalWorkflowId = (await stack.db.query<{ temporal_workflow_id: string }>('SELECT temporal_workflow_id FROM scheduler_executions WHERE id = $1', [id])).rows[0]
    ?.temporal_workflow_id as string;
  // what `temporal workflow terminate` does: the run closes at once, no workflow code runs, nothing writes its end
  await (await stack.temporal.client()).workflow.getHandle(temporalWorkflowId).terminate('ended by hand');
  const ended = await eventually(async () => {
    const e = await execution(id);
    return e.status !== 'running' && e;
  }, 60_000, 200);
  // an operator stopped it (before session 49: `failed`, `Task slow failed: the execution's Temporal run was terminated; …`)
  const error = "The execution's Temporal run was terminated in Temporal (reason: ended by hand) before it recorded an outcome; the execution is recorded stopped, and what it did is unknown";
  expect(runStopped('TERMINATED', 'ended by hand')).toBe(error);
  expect(ended).toMatchObject({ status: 'stopped', error });
  expect(ended.tasks).toEqual([
    expect.objectContaining({
      name: 'slow',
      status: 'stopped',
      error: "the execution's Temporal run was terminated in Temporal (reason: ended by hand); what this task did is unknown",
    }),
    expect.objectContaining({ name: 'after', status: 'skipped' }),
  ]);
  expect(ended.tasks[0].error).toBe(runStoppedTask('TERMINATED', 'ended by hand'));
  const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs as { level: string; message: string }[];
  expect(logs).toEqual(expect.arrayContaining([expect.objectContaining({ level: 'warning', message: error })]));
  expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  // the list filtered by status finds it among the stopped ones
  expect((await inject('GET', '/api/v1/executions?status=stopped&workflow=terminated')).json().executions.map((e: { id: string }) => e.id)).toContain(id);
  expect(
    lines.some(
      (l) => l.level === 40 && l.executionId === id && l.msg === 'execution stopped: its Temporal run was terminated in Temporal (reason: ended by hand) without recording its end',
    ),
  ).toBe(true);
  expect(await reconciledCount('run_closed')).toBe(before + 1);
  // a run that ended normally is never touched: the waiting run of the first test completed, and is still completed
});

test('a start that Temporal holds longer than the grace: the reconciler fails the row, the request answers 503, and the run never runs', async () => {
  await flowWorkflow('slow', 'slow');
  // another API (no reconciler of its own: a second listener) whose way to Temporal stalls
  const slowProxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxies.push(slowProxy);
  const slowTemporal = createTemporalHandle(slowProxy.address, stack.config.temporal.namespace);
  const slowApp = await buildSchedulerApp({ db: stack.db, config: stack.config, keys: stack.keys, temporal: slowTemporal, logger, metrics: createServiceMetrics(), secondListener: true });
  try {
    await slowApp.ready();
    await slowTemporal.client(); // connected: what stalls is the start itself
    slowProxy.setMode('hold');
    const answer = slowApp.inject({ method: 'POST', url: '/api/v1/workflows/slow/run', headers: { 'x-api-key': TEST_API_KEY } });
    const id = await rowOf('slow');
    // the row is older than the grace and Temporal has no run of it yet: the file's API fails it
    await eventually(async () => (await execution(id)).error === NEVER_STARTED, 60_000, 100);
    slowProxy.setMode('forward'); // the start gets through now (or has timed out)
    const answered = await answer;
    expect(answered.statusCode).toBe(503);
    expect(answered.json()).toEqual({ detail: 'Could not start the execution: Temporal is unavailable' });
    // a run Temporal got after all ends at once, sending nothing
    const client = await stack.temporal.client();
    const result = await eventually(async () => {
      try {
        return { ended: await client.workflow.getHandle(`execution:${id}`).result() };
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { ended: 'never started' };
        throw err;
      }
    }, 60_000, 500);
    expect(['deleted', 'never started']).toContain(result.ended);
    expect(await execution(id)).toMatchObject({ status: 'failed', error: NEVER_STARTED });
    expect(flowsSent('slow')).toBe(0);
  } finally {
    await slowApp.close();
    await slowTemporal.close();
  }
});
