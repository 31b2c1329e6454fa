/**
 * Schedules fall due while every worker is down (docs/scheduler.md#catch-up): two `armada worker` processes run two
 * workflows on `@every 5s`, each with one flow task on the fake platform; then one worker is frozen (SIGSTOP: its
 * polls stay open on the server) and the other killed (SIGKILL) for an outage that spans several due times. When the
 * frozen one is resumed and the killed one replaced, each workflow runs exactly one catch-up (its nominal time inside
 * the outage), sent once to the platform, and then its normal cadence; every execution is listed by the API with its
 * logs, and none stays `running`.
 *
 * Why a short outage stands for the three minutes: with the Temporal server up, the Schedule starts the run at
 * the first missed time whatever the outage's length (the catch-up window only matters while the server itself is
 * down); that run waits in the task queue, and SKIP skips every later time while it counts as running. So one outage
 * of several due times has the same outcome as one of three minutes. OUTAGE_MS also outlasts the workflow task timeout
 * (10 s): a run handed to the frozen worker's open poll is timed out and handed out again, which is the part that
 * differs from a worker that is simply gone.
 */
import type { ChildProcess } from 'node:child_process';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { scheduleIdOf } from '../../lib/scheduler/temporalSchedules';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, type SchedulerInject } from '../support/schedulerStack';
import { spawnStackWorker } from '../support/workerProcess';

jest.setTimeout(300_000);

const EVERY_MS = 5000;
/** covers four or five due times of each schedule */
const OUTAGE_MS = 22_000;
const WORKFLOWS = ['outage-a', 'outage-b'] as const;

let stack: TestStack;
let fake: FakeFlowBuilder;
let inject: SchedulerInject;
const workers: ChildProcess[] = [];
const frozen = new Set<ChildProcess>();

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], worker: false, file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  fake = await startFakeFlowBuilder();
  inject = schedulerInject(stack);
}, 120_000);

afterAll(async () => {
  for (const w of frozen) w.kill('SIGCONT');
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await fake?.close();
  if (stack) await closeSchedulerStack(stack);
});

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack, { readyTimeoutMs: 120_000 });
  workers.push(child);
  return child;
}

interface Execution {
  id: string;
  workflow: string;
  status: string;
  trigger: string;
  scheduledAt: string | null;
  startedAt: string;
}

async function executionsOf(workflow: string): Promise<Execution[]> {
  const r = await inject('GET', `/api/v1/executions?workflow=${workflow}&limit=100`);
  expect(r.statusCode).toBe(200);
  return (r.json().executions as Execution[]).slice().sort((a, b) => Date.parse(a.scheduledAt ?? a.startedAt) - Date.parse(b.scheduledAt ?? b.startedAt));
}

/** The run requests of `workflow` the platform received (each workflow's task sends its own name as the input). */
const runsSentFor = (workflow: string) =>
  fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}` && (r.body as { input_value?: string } | null)?.input_value === workflow);

const scheduledMs = (e: Execution) => Date.parse(e.scheduledAt as string);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('every worker down across several due times: one catch-up run per workflow, sent once, then the normal cadence; none left running', async () => {
  const [first, second] = await Promise.all([startWorkerProcess(), startWorkerProcess()]);
  const source = await inject('POST', '/api/v1/sources', { name: 'fake', source_type: 'langflow', url: fake.url });
  expect(source.statusCode).toBe(201);
  for (const name of WORKFLOWS) {
    const created = await inject('POST', '/api/v1/workflows', {
      name,
      schedule: `@every ${EVERY_MS / 1000}s`,
      tasks: [{ name: 'f', type: 'flow', source: source.json().id, flow: FAKE_FLOWS.summarise.id, input: name }],
    });
    expect(created.statusCode).toBe(201);
  }
  // the normal cadence before the outage
  await eventually(async () => {
    for (const name of WORKFLOWS) if ((await executionsOf(name)).filter((e) => e.status === 'completed').length < 2) return false;
    return true;
  }, 90_000, 250);

  // the outage: right after a run of each workflow ended, so none is half-way when it begins. Ended for Temporal too:
  // the execution row is completed by the run's last activity, a moment before its workflow closes, and a workflow
  // still open when the workers go would count as running for the whole outage (SKIP then skips every due time in
  // it, and the first run after is a time after the outage: ci56a, on a loaded machine)
  const client = await stack.temporal.client();
  const scheduleIds = WORKFLOWS.map(scheduleIdOf);
  await eventually(async () => {
    for (const name of WORKFLOWS) if ((await executionsOf(name)).some((e) => e.status === 'running')) return false;
    for (const id of scheduleIds) if ((await client.schedule.getHandle(id).describe()).info.runningActions.length > 0) return false;
    return true;
  }, 30_000, 50);
  const seenBefore = new Set<string>();
  for (const name of WORKFLOWS) for (const e of await executionsOf(name)) seenBefore.add(e.id);
  const downAt = Date.now();
  first.kill('SIGSTOP');
  frozen.add(first);
  second.kill('SIGKILL');
  const sentBefore = Object.fromEntries(WORKFLOWS.map((n) => [n, runsSentFor(n).length]));
  await sleep(OUTAGE_MS);
  const upAt = Date.now();
  first.kill('SIGCONT');
  frozen.delete(first);
  const replacement = startWorkerProcess();

  // each workflow catches up, then runs on its cadence again: two runs due after the outage have completed
  await eventually(async () => {
    for (const name of WORKFLOWS) {
      const after = (await executionsOf(name)).filter((e) => e.scheduledAt && scheduledMs(e) >= upAt && e.status === 'completed');
      if (after.length < 2) return false;
    }
    return true;
  }, 120_000, 500);
  await replacement;
  for (const name of WORKFLOWS) expect((await inject('POST', `/api/v1/schedules/${name}/pause`)).statusCode).toBe(200);
  await eventually(async () => {
    for (const name of WORKFLOWS) if ((await executionsOf(name)).some((e) => e.status === 'running')) return false;
    return true;
  }, 60_000, 250);
  await sleep(1000); // a request still on its way to the platform arrives

  for (const name of WORKFLOWS) {
    const all = await executionsOf(name);
    expect(all.every((e) => e.trigger === 'schedule' && e.scheduledAt !== null)).toBe(true);
    // none stuck running: every one completed (the platform answered every run)
    expect(all.map((e) => e.status)).toEqual(all.map(() => 'completed'));
    // no nominal time ran twice
    expect(new Set(all.map((e) => e.scheduledAt)).size).toBe(all.length);
    // exactly one run of a time that fell due while no worker ran: the catch-up, never a burst
    const missed = all.filter((e) => !seenBefore.has(e.id) && scheduledMs(e) < upAt);
    expect(missed).toHaveLength(1);
    expect(scheduledMs(missed[0] as Execution)).toBeGreaterThan(downAt - EVERY_MS);
    // and it came first after the outage; the later runs are due times after it, one interval apart at least
    const later = all.filter((e) => scheduledMs(e) >= upAt);
    expect(later.length).toBeGreaterThanOrEqual(2);
    const times = [scheduledMs(missed[0] as Execution), ...later.map(scheduledMs)];
    for (let i = 1; i < times.length; i++) expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(EVERY_MS);
    // the platform got one request per execution: none during the outage, one for the catch-up, one per later run
    const sent = runsSentFor(name);
    expect(sent).toHaveLength(all.length);
    expect(sent.filter((r) => r.at > downAt + 1000 && r.at < upAt)).toHaveLength(0);
    expect(sent.length - (sentBefore[name] as number)).toBe(1 + later.length);
    // each execution can be read with its logs
    for (const e of all) {
      const detail = (await inject('GET', `/api/v1/executions/${e.id}`)).json();
      expect(detail.tasks[0]).toMatchObject({ name: 'f', status: 'completed' });
      expect(detail.tasks[0].output).toContain(`ran Summarise with ${name}`);
      const logs = (await inject('GET', `/api/v1/executions/${e.id}/logs`)).json().logs.map((l: { message: string }) => l.message);
      expect(logs).toEqual(expect.arrayContaining(['Task f completed', 'Execution completed']));
    }
  }
});
