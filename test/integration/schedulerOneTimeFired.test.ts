/**
 * A one-time schedule whose one action Temporal has taken has run, also before its run wrote `ran_at` (no worker has
 * taken the run yet): a PATCH is the 409 `already ran`, as after `ran_at`. It used to move the schedule: a 200 with
 * the new time, which never came (the Temporal Schedule had no action left).
 */
import { eventually, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;
const name = `fired-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  // no worker: a run Temporal starts waits in the task queue, its row unwritten
  stack = await startSchedulerStack({ worker: false });
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

test('PATCH of a one-time schedule Temporal fired, before its run began: 409, and the Temporal Schedule keeps its time', async () => {
  const at = new Date(Math.ceil((Date.now() + 2000) / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at })).json();
  const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
  const client = await stack.temporal.client();
  const handle = client.schedule.getHandle(`schedule:${name}:${s.id}`);
  await eventually(async () => (await handle.describe()).info.numActionsTaken === 1, 15_000);
  expect((await inject('GET', url)).json()).toMatchObject({ status: 'completed', nextRun: null });

  const later = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  for (const body of [{ at: later }, { timezone: 'Asia/Tokyo' }, { input: 'x' }]) {
    const moved = await inject('PATCH', url, body);
    expect([body, moved.statusCode, moved.json()]).toEqual([body, 409, { detail: `Schedule ${s.id} already ran` }]);
  }
  expect((await inject('GET', url)).json()).toMatchObject({ at, runAt: new Date(at).toISOString(), timezone: 'UTC', input: null, status: 'completed' });
  const d = await handle.describe();
  expect(d.spec.calendars?.[0]).toMatchObject({ hour: [{ start: new Date(at).getUTCHours() }], minute: [{ start: new Date(at).getUTCMinutes() }] });

  // the run waiting for a worker goes
  const run = d.info.recentActions[0]?.action.workflow.workflowId as string;
  await client.workflow.getHandle(run).terminate('test over');
});
