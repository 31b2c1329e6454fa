/**
 * A schedule changed (PATCH, pause, resume) while it is deleted: the two wait for each other on the schedule's row, so
 * the change is applied before the deletion or is the 404 `Schedule not found` after it. Before, the deletion removed
 * the Temporal Schedule without the row's lock: a pause or resume in between was a 500, a PATCH the 400
 * `Error updating schedule: schedule not found`. A Temporal Schedule gone from under its row (a deleted workflow's, or
 * one Temporal lost) is the route's 404 too, and is made to match its row again (created again while the row is there).
 */
import { eventually, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;
const name = `delchg-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  stack = await startSchedulerStack({ worker: false });
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name, schedule: '0 3 1 1 *', enabled: false, tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const temporalHas = async (temporalId: string): Promise<boolean> =>
  (await stack.temporal.client()).schedule
    .getHandle(temporalId)
    .describe()
    .then(() => true, () => false);

test('DELETE at once with a PATCH, a pause or a resume: each answer is 200 or the 404, and the schedule is gone from both', async () => {
  const changes = [
    (url: string) => inject('PATCH', url, { schedule: '0 5 1 1 *' }),
    (url: string) => inject('POST', `${url}/pause`),
    (url: string) => inject('POST', `${url}/resume`),
  ];
  for (let round = 0; round < 9; round++) {
    const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 3 1 1 *', enabled: round % 2 === 0 })).json();
    const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
    const [deleted, changed] = await Promise.all([inject('DELETE', url), (changes[round % 3] as (u: string) => ReturnType<typeof inject>)(url)]);
    expect([round, deleted.statusCode, deleted.json()]).toEqual([round, 200, { id: s.id, workflow: name, deleted: true }]);
    expect([round, changed.statusCode]).toEqual([round, changed.statusCode === 200 ? 200 : 404]);
    if (changed.statusCode === 404) expect(changed.json()).toEqual({ detail: 'Schedule not found' });
    expect([round, (await inject('GET', url)).statusCode, await temporalHas(`schedule:${name}:${s.id}`)]).toEqual([round, 404, false]);
  }
});

test('two DELETEs at once: one deletes, the other is the 404', async () => {
  const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 3 1 1 *' })).json();
  const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
  const answers = await Promise.all([inject('DELETE', url), inject('DELETE', url)]);
  expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 404]);
});

test('a Temporal Schedule gone from under its row: pause, resume and PATCH are the 404, never a 500, and the Schedule comes back from the row', async () => {
  const client = await stack.temporal.client();
  const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 3 1 1 *', timezone: 'Asia/Tokyo' })).json();
  const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
  const temporalId = `schedule:${name}:${s.id}`;
  for (const change of [() => inject('POST', `${url}/pause`), () => inject('POST', `${url}/resume`), () => inject('PATCH', url, { schedule: '0 4 1 1 *' })]) {
    await client.schedule.getHandle(temporalId).delete();
    const r = await change();
    expect([r.statusCode, r.json()]).toEqual([404, { detail: 'Schedule not found' }]);
    // the row is as it was, and Temporal gets its Schedule back from it
    await eventually(() => temporalHas(temporalId), 15_000, 200);
    const d = await client.schedule.getHandle(temporalId).describe();
    expect([d.spec.timezone, d.state.paused, d.spec.calendars?.[0]?.hour?.[0]?.start]).toEqual(['Asia/Tokyo', false, 3]);
  }
  // the workflow's own schedule through the spec's routes: its 404 is the workflow's
  await client.schedule.getHandle(`schedule:${name}`).delete();
  const paused = await inject('POST', `/api/v1/schedules/${name}/resume`);
  expect([paused.statusCode, paused.json()]).toEqual([404, { detail: 'Workflow not found' }]);
  await eventually(() => temporalHas(`schedule:${name}`), 15_000, 200);
  const after = await inject('POST', `/api/v1/schedules/${name}/resume`);
  expect([after.statusCode, after.json().enabled, after.json().status]).toEqual([200, true, 'active']);
  expect((await client.schedule.getHandle(`schedule:${name}`).describe()).state.paused).toBe(false);
});
