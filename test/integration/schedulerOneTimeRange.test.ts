/**
 * One-time schedules run at the latest at 2100-12-31T23:59:59Z, the end of the years Temporal's calendar takes
 * (2000–2100; docs/scheduler.md#schedules). A later time is a 400 in Armada's words on creation and on a PATCH. Before,
 * it passed the schema and Temporal refused it: `Invalid schedule time: invalid calendar spec: Year Start is not in
 * range [2000-2100]…`.
 */
import { startTestStack, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject } from '../support/schedulerStack';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name: 'far-future', tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const tooLate = (at: string) => ({ detail: `Time "${at}" is past 2100-12-31T23:59:59Z (UTC), the latest time a one-time schedule can run` });
const post = (body: Record<string, unknown>) => inject('POST', '/api/v1/workflows/far-future/schedules', { type: 'one-time', enabled: false, ...body });

test('up to 2100-12-31T23:59:59Z is created; a time after it (also by rounding or by its zone) is a 400 saying so', async () => {
  const last = await post({ at: '2100-12-31T23:59:59Z' });
  expect([last.statusCode, last.json().runAt]).toEqual([201, '2100-12-31T23:59:59.000Z']);
  // a wall-clock time of 2101 in Tokyo is still 2100 in UTC
  const tokyo = await post({ at: '2101-01-01T08:59:59', timezone: 'Asia/Tokyo' });
  expect([tokyo.statusCode, tokyo.json().runAt]).toEqual([201, '2100-12-31T23:59:59.000Z']);
  for (const [at, timezone] of [
    ['2100-12-31T23:59:59.9999', 'UTC'], // rounds up to 2101-01-01T00:00:00Z
    ['9999-01-01T00:00:00Z', 'UTC'],
    ['2100-12-31T23:30', 'America/Los_Angeles'],
  ] as const) {
    const r = await post({ at, timezone });
    expect([at, r.statusCode, r.json()]).toEqual([at, 400, tooLate(at)]);
  }
});

test('a PATCH moving a one-time schedule past 2100 is a 400 saying so, and the schedule is unchanged', async () => {
  const s = (await post({ at: '2100-12-31T23:30' })).json();
  const url = `/api/v1/workflows/far-future/schedules/${s.id}`;
  const moved = await inject('PATCH', url, { at: '2101-01-01T00:00:00Z' });
  expect([moved.statusCode, moved.json()]).toEqual([400, tooLate('2101-01-01T00:00:00Z')]);
  // its own time in a zone west of UTC is 2101 there
  const rezoned = await inject('PATCH', url, { timezone: 'America/New_York' });
  expect([rezoned.statusCode, rezoned.json()]).toEqual([400, tooLate('2100-12-31T23:30')]);
  expect((await inject('GET', url)).json()).toMatchObject({ at: '2100-12-31T23:30', timezone: 'UTC', runAt: '2100-12-31T23:30:00.000Z' });
});
