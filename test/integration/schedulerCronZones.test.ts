/**
 * Zone names are case-sensitive (docs/scheduler.md#error-details-exact), also the names the runtime's Intl knows as
 * aliases of another (`Europe/Kyiv` → `Europe/Kiev`): `europe/kyiv` used to pass Armada's check, so a one-time
 * schedule and the zone of a workflow without a cron were stored with it (Temporal, which would refuse it, is not
 * asked for those), and a cron schedule got Temporal's refusal without the hint. And how a cron schedule meets a
 * daylight-saving change, as docs/scheduler.md says it (Temporal's calendar, which `nextRun` shows). 6 and 7 fields
 * are no accepted form any more (schedulerCronRule.test.ts).
 */
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;
const name = `zones-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  stack = await startSchedulerStack({ worker: false });
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const wrongCase = (zone: string) => ({ detail: `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris (names are case-sensitive)` });

test('a wrongly cased alias is a 400 saying names are case-sensitive, wherever a zone is given; nothing is stored', async () => {
  for (const zone of ['europe/kyiv', 'asia/kathmandu', 'est5edt']) {
    const oneTime = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: '2099-01-01T09:00', timezone: zone, enabled: false });
    expect([zone, oneTime.statusCode, oneTime.json()]).toEqual([zone, 400, wrongCase(zone)]);
    const cron = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 3 1 1 *', timezone: zone, enabled: false });
    expect([zone, cron.statusCode, cron.json()]).toEqual([zone, 400, wrongCase(zone)]);
    // the workflow has no cron: its default schedule's zone is only stored, for when a cron is set
    const patched = await inject('PATCH', `/api/v1/schedules/${name}`, { timezone: zone });
    expect([zone, patched.statusCode, patched.json()]).toEqual([zone, 400, wrongCase(zone)]);
    const created = await inject('POST', '/api/v1/workflows', { name: `${name}-x`, timezone: zone, tasks: [{ name: 's', type: 'script', script: 'true' }] });
    expect([zone, created.statusCode, created.json()]).toEqual([zone, 400, wrongCase(zone)]);
  }
  expect((await inject('GET', `/api/v1/workflows/${name}`)).json()).toMatchObject({ timezone: 'UTC' });
  expect((await inject('GET', `/api/v1/workflows/${name}/schedules`)).json()).toEqual({ schedules: [] });
});

test('the same aliases spelled right are taken, and Temporal applies them', async () => {
  for (const zone of ['Europe/Kyiv', 'Asia/Kathmandu', 'EST5EDT']) {
    const cron = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 3 1 1 *', timezone: zone, enabled: false });
    expect([zone, cron.statusCode, cron.json().timezone]).toEqual([zone, 201, zone]);
    const d = await (await stack.temporal.client()).schedule.getHandle(`schedule:${name}:${cron.json().id}`).describe();
    expect(d.spec.timezone).toBe(zone);
  }
});

test('a cron time a daylight-saving change skips has no run that day, one it repeats runs twice: nextRun is what Temporal will do', async () => {
  const client = await stack.temporal.client();
  const times = async (schedule: string, timezone: string) => {
    const r = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule, timezone });
    expect(r.statusCode).toBe(201);
    const d = await client.schedule.getHandle(`schedule:${name}:${r.json().id}`).describe();
    await inject('POST', `/api/v1/workflows/${name}/schedules/${r.json().id}/pause`);
    return { nextRun: r.json().nextRun, temporal: d.info.nextActionTimes.map((t) => t.toISOString()) };
  };
  // 02:30 on the last Sunday of March in Berlin never exists (02:00 CET → 03:00 CEST that day every year; Temporal
  // matches the day of the month and of the week both, not either): no run at all
  expect(await times('30 2 25-31 3 SUN', 'Europe/Berlin')).toEqual({ nextRun: null, temporal: [] });
  // 01:30 on the first Sunday of November in New York happens twice (EDT, then EST): 05:30 and 06:30 UTC that day
  const twice = await times('30 1 1-7 11 SUN', 'America/New_York');
  const [first, second] = twice.temporal;
  expect([twice.nextRun, first?.slice(10), second?.slice(0, 10), second?.slice(10)]).toEqual([first, 'T05:30:00.000Z', first?.slice(0, 10), 'T06:30:00.000Z']);
  expect(new Date(first as string).getUTCDay()).toBe(0);
});
