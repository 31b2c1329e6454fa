/**
 * A worker's stop waits for a run start it handed over (lib/runtime/workInHand.ts): a scheduled run's local try that
 * is still waiting for its platform after LOCAL_START_MS returns and leaves the request in flight to the worker. When
 * the worker is stopped meanwhile, no beginRun of that worker awaits the request (none is dispatched to a worker that
 * is shutting down), and the process used to exit with the request in flight: the next try then found the claim with
 * no sign of life and failed the task, the answer unknown. Now the stop returns once the answer is recorded (within
 * the grace time), and the run completes with it on the next worker.
 */
import { LOCAL_START_MS } from '../../activities/scheduler/executionProgress';
import type { RunningWorkers } from '../../workers/createWorker';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, type SchedulerInject } from '../support/schedulerStack';

jest.setTimeout(120_000);

let stack: TestStack;
let fake: FakeFlowBuilder;
let inject: SchedulerInject;
const running: RunningWorkers[] = [];

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  fake = await startFakeFlowBuilder();
  inject = schedulerInject(stack);
}, 120_000);

afterAll(async () => {
  for (const w of running) await w.stop();
  await fake?.close();
  if (stack) await closeSchedulerStack(stack);
});

const runsSent = () => fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`).length;

test("a worker stopped while its handed-over start waits for the platform: the stop returns once the answer is recorded, and the run completes with it", async () => {
  const worker = await startStackWorkers(stack, { shutdownGraceMs: 15_000 });
  running.push(worker);
  const source = (await inject('POST', '/api/v1/sources', { name: 'fake', source_type: 'langflow', url: fake.url })).json().id as string;
  expect((await inject('POST', '/api/v1/workflows', { name: 'drained', tasks: [{ name: 'f1', type: 'flow', source, flow: FAKE_FLOWS.summarise.id, input: 'drain' }] })).statusCode).toBe(201);
  // the answer comes after the local try has handed over (LOCAL_START_MS), well within the grace time
  fake.runDelayMs = LOCAL_START_MS + 2500;
  const run = await inject('POST', '/api/v1/workflows/drained/run');
  expect(run.statusCode).toBe(200);
  const executionId = run.json().executionId as string;
  await eventually(async () => runsSent() === 1, 30_000, 20);

  const stopAsked = Date.now();
  await worker.stop();
  const stoppedAfter = Date.now() - stopAsked;
  // when the process could exit, the answer was on record: the request is not left without one
  const outcome = await stack.db.query<{ state: string }>('SELECT state FROM scheduler_task_outcomes WHERE execution_id = $1 AND task_index = 0', [executionId]);
  expect({ state: outcome.rows[0]?.state, stoppedAfter: stoppedAfter >= LOCAL_START_MS }).toEqual({ state: 'done', stoppedAfter: true });

  // the next worker's beginRun reports that answer: one request, the run completed with it
  running.push(await startStackWorkers(stack));
  const e = await eventually(async () => {
    const body = (await inject('GET', `/api/v1/executions/${executionId}`)).json();
    return body.status !== 'running' && body;
  }, 60_000);
  fake.runDelayMs = 0;
  expect(e).toMatchObject({ status: 'completed', error: null });
  expect(e.tasks[0]?.output).toContain('ran Summarise with drain');
  expect(runsSent()).toBe(1);
});
