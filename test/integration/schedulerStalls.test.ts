/**
 * Short stalls of PostgreSQL or Temporal while scheduler runs go: an execution's outcome is its tasks' real outcome
 * (docs/scheduler.md#task-outcomes). The stack runs on a PostgreSQL of this file's own (test/support/ownPostgres.ts),
 * frozen for real (SIGSTOP of the postmaster and every backend); the worker reaches Temporal through a TCP proxy that
 * holds every byte for the stall (test/support/tcpProxy.ts), so Temporal hears nothing from it: no heartbeat, no
 * completion. The runs: a 3 s script, then a flow on a fake LangFlow that answers in 2 s.
 *
 * Before: PostgreSQL frozen 20 s or Temporal unreachable 20 s failed 3–4 executions per run with `Task s1 failed:
 * activity Heartbeat timeout` (or f1), though every script ran to its end: the tasks' heartbeat timeout was 3 s, and the
 * last log write of a script or flow ran without heartbeats. A stall longer than the heartbeat timeout failed the task
 * too (one try for scripts), its worker's finished work lost.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { groupAlive } from '../../lib/process/processGroup';
import { EXECUTION_STOPPED } from '../../lib/scheduler/taskStop';
import { recordHistory } from '../support/attemptHelpers';
import type { RunningWorkers } from '../../workers/createWorker';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { env, eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { closeSchedulerStack, schedulerInject, type SchedulerInject } from '../support/schedulerStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(300_000);

let home: string;
let pg: OwnPostgres;
let stack: TestStack;
let proxy: TcpProxy;
let workers: RunningWorkers;
let fake: FakeFlowBuilder;
let inject: SchedulerInject;
let sourceId: string;
let thaw: (() => void) | undefined;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-sched-stalls-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  stack = await startTestStack({ services: ['scheduler'], databaseUrl: pg.url, file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  workers = await startStackWorkers(stack, { address: proxy.address });
  fake = await startFakeFlowBuilder();
  inject = schedulerInject(stack);
  const r = await inject('POST', '/api/v1/sources', { name: 'fake', source_type: 'langflow', url: fake.url });
  expect(r.statusCode).toBe(201);
  sourceId = r.json().id;
}, 240_000);

afterAll(async () => {
  thaw?.();
  proxy?.setMode('forward');
  await fake?.close();
  await workers?.stop();
  if (stack) await closeSchedulerStack(stack);
  await proxy?.close();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const runsSent = () => fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`).length;

interface Execution {
  id: string;
  status: string;
  error: string | null;
  tasks: { name: string; status: string; output: string; error: string | null }[];
}

/** Lines of `file` (what the scripts appended: one line per script that ran). */
const linesOf = (file: string): string[] => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** A workflow of a 3 s script (appending its execution id to `ran`) and a flow. */
async function scriptThenFlow(name: string, ran: string): Promise<void> {
  const r = await inject('POST', '/api/v1/workflows', {
    name,
    tasks: [
      { name: 's1', type: 'script', script: `echo "$ARMADA_EXECUTION_ID" >> ${ran}; echo start; sleep 3; echo end` },
      { name: 'f1', type: 'flow', source: sourceId, flow: FAKE_FLOWS.summarise.id, input: name },
    ],
  });
  expect(r.statusCode).toBe(201);
}

async function run(name: string): Promise<string> {
  const r = await inject('POST', `/api/v1/workflows/${name}/run`);
  expect(r.statusCode).toBe(200);
  return r.json().executionId;
}

async function ended(id: string, limitMs = 150_000): Promise<Execution> {
  return eventually(async () => {
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
    return e.status !== 'running' && e;
  }, limitMs, 250);
}

/** Three runs of a script-then-flow workflow, a second apart, with `stall` done 2.5 s after the first began. */
async function runsThroughStall(name: string, stall: () => Promise<void>): Promise<{ executions: Execution[]; ran: string[]; sent: number }> {
  const ran = path.join(home, `${name}.ran`);
  await scriptThenFlow(name, ran);
  fake.runDelayMs = 2000;
  const before = runsSent();
  const ids: string[] = [];
  const t0 = Date.now();
  for (let i = 0; i < 3; i++) {
    ids.push(await run(name));
    await sleep(1000);
  }
  await sleep(Math.max(0, 2500 - (Date.now() - t0)));
  await stall();
  const executions = await Promise.all(ids.map((id) => ended(id)));
  fake.runDelayMs = 0;
  return { executions, ran: linesOf(ran), sent: runsSent() - before };
}

function expectAllCompleted(r: { executions: Execution[]; ran: string[]; sent: number }): void {
  for (const e of r.executions) {
    expect({ id: e.id, status: e.status, error: e.error }).toEqual({ id: e.id, status: 'completed', error: null });
    expect(e.tasks.map((t) => [t.name, t.status])).toEqual([
      ['s1', 'completed'],
      ['f1', 'completed'],
    ]);
    expect(e.tasks[0]?.output).toBe('start\nend\n');
    expect(e.tasks[1]?.output).toContain('ran Summarise');
  }
  // every script ran once, every flow was sent once
  expect([...r.ran].sort()).toEqual(r.executions.map((e) => e.id).sort());
  expect(r.sent).toBe(r.executions.length);
}

test('PostgreSQL frozen (SIGSTOP) for 20 s while runs go: every execution completes, each script ran once, each flow was sent once', async () => {
  const r = await runsThroughStall('pg-frozen', async () => {
    thaw = pg.freeze();
    await sleep(20_000);
    thaw();
    thaw = undefined;
  });
  expectAllCompleted(r);
});

test('Temporal unreachable for the worker for 20 s (every byte held) while runs go: every execution completes, each script ran once, each flow was sent once', async () => {
  const r = await runsThroughStall('temporal-stalled', async () => {
    proxy.setMode('hold');
    await sleep(20_000);
    proxy.setMode('forward');
  });
  expectAllCompleted(r);
});

test('Temporal unreachable for 40 s, longer than the heartbeat timeout: the timed-out tries finish their work and the next tries report it; nothing runs twice', async () => {
  const ran = path.join(home, 'long.ran');
  expect(
    (await inject('POST', '/api/v1/workflows', { name: 'long-script', tasks: [{ name: 's1', type: 'script', script: `echo "$ARMADA_EXECUTION_ID" >> ${ran}; sleep 45; echo end` }] }))
      .statusCode,
  ).toBe(201);
  expect((await inject('POST', '/api/v1/workflows', { name: 'long-flow', tasks: [{ name: 'f1', type: 'flow', source: sourceId, flow: FAKE_FLOWS.summarise.id, input: 'long' }] })).statusCode).toBe(201);
  fake.runDelayMs = 45_000; // answers after the stall
  const before = runsSent();
  const script = await run('long-script');
  const flow = await run('long-flow');
  await eventually(async () => linesOf(ran).length === 1 && runsSent() > before, 30_000, 50);
  proxy.setMode('hold');
  await sleep(40_000);
  proxy.setMode('forward');
  const [s, f] = await Promise.all([ended(script, 180_000), ended(flow, 180_000)]);
  fake.runDelayMs = 0;
  expect(s).toMatchObject({ status: 'completed', error: null });
  expect(s.tasks[0]).toMatchObject({ name: 's1', status: 'completed', output: 'end\n' });
  expect(linesOf(ran)).toEqual([script]);
  expect(f).toMatchObject({ status: 'completed', error: null });
  expect(f.tasks[0]?.output).toContain('ran Summarise with long');
  expect(runsSent() - before).toBe(1);
  // Temporal did time the first tries out: the tasks' results came from a later try, which reported the first's outcome.
  // The script's try is an activity's; the first flow's is the local start's (docs/scheduler.md#local-start), so it
  // is the first workflow task that timed out, and the try of its retry (or beginRun after it) reported the answer.
  const client = await stack.temporal.client();
  const { EventType } = temporal.api.enums.v1;
  const events = async (id: string) => (await client.workflow.getHandle(`execution:${id}`).fetchHistory()).events ?? [];
  const scriptAttempts = (await events(script)).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 0] : []));
  expect(Math.max(...scriptAttempts)).toBeGreaterThan(1);
  expect((await events(flow)).map((e) => e.eventType)).toContain(EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT);
});

test('a stop still takes effect at once: a sleeping script is killed within 5 s, a first flow waiting on the platform is abandoned; both recorded stopped, Cancelled in Temporal', async () => {
  const pidFile = path.join(home, 'stop.pid');
  expect(
    (await inject('POST', '/api/v1/workflows', { name: 'sleeper', tasks: [{ name: 'sleep', type: 'script', script: `echo $$ > ${pidFile}; sleep 60` }, { name: 'after', type: 'script', script: 'echo after' }] }))
      .statusCode,
  ).toBe(201);
  expect((await inject('POST', '/api/v1/workflows', { name: 'held-flow', tasks: [{ name: 'f1', type: 'flow', source: sourceId, flow: FAKE_FLOWS.summarise.id, input: 'held' }] })).statusCode).toBe(201);
  const id = await run('sleeper');
  const pid = await eventually(async () => fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8').trim()), 20_000, 50);
  expect(groupAlive(pid)).toBe(true);
  fake.runDelayMs = 60_000;
  const before = runsSent();
  const flowId = await run('held-flow');
  await eventually(async () => runsSent() > before, 20_000, 50);

  const t0 = Date.now();
  const [stopScript, stopFlow] = await Promise.all([inject('POST', `/api/v1/executions/${id}/stop`), inject('POST', `/api/v1/executions/${flowId}/stop`)]);
  expect(stopScript.json()).toEqual({ executionId: id, status: 'stopped' });
  expect(stopFlow.json()).toEqual({ executionId: flowId, status: 'stopped' });
  await eventually(async () => !groupAlive(pid), 5000, 50);
  expect(Date.now() - t0).toBeLessThan(5000);
  fake.runDelayMs = 0;
  const client = await stack.temporal.client();
  for (const [execution, states] of [
    [id, ['stopped', 'skipped']],
    [flowId, ['stopped']],
  ] as const) {
    const e = (await inject('GET', `/api/v1/executions/${execution}`)).json();
    expect({ status: e.status, error: e.error, tasks: e.tasks.map((t: { status: string }) => t.status) }).toEqual({ status: 'stopped', error: 'Stopped by request', tasks: states });
    const handle = client.workflow.getHandle(`execution:${execution}`);
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    // the stop reached the task's try through PostgreSQL (its heartbeats go out every 24 s): it ended ExecutionStopped.
    // The workflow's own cancellation races it: when the workflow closed first (the try is cancelled, not waited for),
    // the try's failure came after the close and is not in the history; no other failure ever is
    const failures = ((await handle.fetchHistory()).events ?? []).flatMap((ev) => (ev.activityTaskFailedEventAttributes ? [ev.activityTaskFailedEventAttributes.failure] : []));
    expect(failures.map((f) => f?.applicationFailureInfo?.type).filter((t) => t !== EXECUTION_STOPPED)).toEqual([]);
    expect(failures.length).toBeLessThanOrEqual(1);
    await recordHistory(stack, `execution:${execution}`, execution === id ? 'workflow-run-stopped-by-request' : 'workflow-run-stopped-by-request-in-first-flow');
  }
  expect(runsSent() - before).toBe(1);
});

test('deleting a workflow still stops its running script at once', async () => {
  const pidFile = path.join(home, 'delete.pid');
  expect((await inject('POST', '/api/v1/workflows', { name: 'doomed', tasks: [{ name: 'sleep', type: 'script', script: `echo $$ > ${pidFile}; sleep 60` }] })).statusCode).toBe(201);
  const id = await run('doomed');
  const pid = await eventually(async () => fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8').trim()), 20_000, 50);
  const t0 = Date.now();
  expect((await inject('DELETE', '/api/v1/workflows/doomed')).statusCode).toBe(200);
  await eventually(async () => !groupAlive(pid), 5000, 50);
  expect(Date.now() - t0).toBeLessThan(8000);
  const handle = (await stack.temporal.client()).workflow.getHandle(`execution:${id}`);
  expect(await eventually(async () => (await handle.describe()).status.name !== 'RUNNING' && (await handle.describe()).status.name, 5000, 50)).toBe('CANCELLED');
});
