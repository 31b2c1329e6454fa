/**
 * Zone names are case-sensitive (docs/scheduler.md#error-details-exact), also the names the runtime's Intl knows as
 * aliases of another (`Europe/Kyiv` → `Europe/Kiev`): `europe/kyiv` used to pass Armada's check, so a one-time
 * schedule and the zone of a workflow without a cron were stored with it (Temporal, which would refuse it, is not
 * asked for those), and a cron schedule got Temporal's refusal without the hint. What else a zone may be (links such
 * as US/Pacific, not offsets), a zone given twice, and how a cron schedule meets a daylight-saving change, as
 * docs/scheduler.md says it (Temporal's calendar, which `nextRun` shows): a string whose every time a change skips is
 * refused, as one naming no date is. 6 and 7 fields are no accepted form any more (schedulerCronRule.test.ts).
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

/** The wall-clock date, time and weekday of an instant in a zone (as `2027-10-03 02:45 Sun`). */
const wallClock = (iso: string, timeZone: string): string => {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', weekday: 'short' }).formatToParts(new Date(iso));
  const get = (type: string) => parts.find((p) => p.type === type)?.value;
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')} ${get('weekday')}`;
};

test('zone names: links and UTC spellings are taken and applied; offsets, wrong case, empty and long names are 400s naming the zone', async () => {
  const client = await stack.temporal.client();
  // 09:00 on 1 January, in UTC time: US/Pacific links to America/Los_Angeles (UTC-8 then), Asia/Calcutta to
  // Asia/Kolkata (UTC+5:30); Etc/GMT-5 is UTC+5 (the tz database's inverted sign)
  const zones = [['UTC', '09:00'], ['Etc/UTC', '09:00'], ['GMT', '09:00'], ['US/Pacific', '17:00'], ['Asia/Calcutta', '03:30'], ['Etc/GMT-5', '04:00']];
  for (const [zone, utc] of zones) {
    const res = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 9 1 1 *', timezone: zone, enabled: false });
    expect([zone, res.statusCode, res.json().timezone]).toEqual([zone, 201, zone]);
    const d = await client.schedule.getHandle(`schedule:${name}:${res.json().id}`).describe();
    expect([zone, d.spec.timezone, d.info.nextActionTimes[0]?.toISOString().slice(11, 16)]).toEqual([zone, zone, utc]);
  }
  const unknown = (zone: string) => ({ detail: `Unknown time zone "${zone}": use an IANA name such as UTC or Europe/Paris` });
  const refused: [Record<string, unknown>, unknown][] = [
    [{ timezone: '+05:00' }, unknown('+05:00')],
    [{ timezone: 'UTC+5' }, unknown('UTC+5')],
    [{ timezone: 'Mars/Olympus' }, unknown('Mars/Olympus')],
    [{ timezone: 'utc' }, { detail: 'Unknown time zone "utc": use an IANA name such as UTC or Europe/Paris (names are case-sensitive: "UTC")' }],
    [{ timezone: 'us/pacific' }, wrongCase('us/pacific')],
    [{ timezone: '' }, { detail: 'Request body is invalid: timezone must NOT have fewer than 1 characters' }],
    [{ timezone: `Europe/${'X'.repeat(60)}` }, { detail: 'Request body is invalid: timezone must NOT have more than 64 characters' }],
    [{ schedule: `CRON_TZ=Europe/${'X'.repeat(60)} 0 9 * * *` }, unknown(`Europe/${'X'.repeat(60)}`)],
  ];
  for (const [body, answer] of refused) {
    const res = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 9 * * *', ...body, enabled: false });
    expect([body, res.statusCode, res.json()]).toEqual([body, 400, answer]);
  }
});

test('a zone given in the prefix and the field: the same is taken, another is a 400 naming both, also on a PATCH of the zone alone', async () => {
  const same = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', timezone: 'Asia/Tokyo', enabled: false });
  expect([same.statusCode, same.json().timezone]).toEqual([201, 'Asia/Tokyo']);
  const conflict = (zone: string) => ({ detail: `Invalid cron expression "CRON_TZ=Asia/Tokyo 0 9 * * *": its CRON_TZ= zone "Asia/Tokyo" is not the schedule's timezone "${zone}"; name the zone once, in "timezone" or in the prefix` });
  const other = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', timezone: 'Europe/Paris' });
  expect([other.statusCode, other.json()]).toEqual([400, conflict('Europe/Paris')]);
  const moved = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${same.json().id}`, { timezone: 'UTC' });
  expect([moved.statusCode, moved.json()]).toEqual([400, conflict('UTC')]);
  // the prefix given with a new string moves the zone; the schedule is as that PATCH left it
  const retimed = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${same.json().id}`, { schedule: 'CRON_TZ=Europe/Paris 0 9 * * *' });
  expect([retimed.statusCode, retimed.json().timezone]).toEqual([200, 'Europe/Paris']);
  const d = await (await stack.temporal.client()).schedule.getHandle(`schedule:${name}:${same.json().id}`).describe();
  expect(d.spec.timezone).toBe('Europe/Paris');
});

test('a string whose every time a daylight-saving change skips is refused like one naming no date, on create and on a PATCH of the string or the zone', async () => {
  const berlin = 'Invalid cron expression "30 2 25-31 3 SUN": it never fires: in Europe/Berlin every day it names is one whose daylight-saving change skips its times';
  const created = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '30 2 25-31 3 SUN', timezone: 'Europe/Berlin' });
  expect([created.statusCode, created.json().detail.startsWith(berlin), created.json().detail.slice(berlin.length)]).toEqual([400, true, expect.stringMatching(/^ \(on \d{4}-03-(2[5-9]|3[01]), the first, the clocks skip 1h\)$/)]);
  const york = await inject('POST', '/api/v1/workflows', { name: `${name}-ny`, schedule: 'CRON_TZ=America/New_York 0,59 2 8-14 3 SUN', tasks: [{ name: 's', type: 'script', script: 'true' }] });
  expect([york.statusCode, york.json().detail]).toEqual([400, expect.stringContaining('it never fires: in America/New_York every day it names is one whose daylight-saving change skips its times')]);
  // the same string where no change skips it is taken; moving it to Berlin is refused, and it stays as it was
  const utc = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '30 2 25-31 3 SUN', timezone: 'UTC', enabled: false });
  expect([utc.statusCode, utc.json().nextRun]).toEqual([201, null]); // paused
  const id = utc.json().id as string;
  const moved = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { timezone: 'Europe/Berlin' });
  expect([moved.statusCode, moved.json().detail]).toEqual([400, expect.stringContaining(berlin)]);
  const other = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { schedule: '0 0 30 2 MON' });
  expect([other.statusCode, other.json()]).toEqual([400, { detail: 'Invalid cron expression "0 0 30 2 MON": it never fires: none of its months (February) has a day 30' }]);
  // the default schedule's PATCH too
  const byDefault = await inject('PATCH', `/api/v1/schedules/${name}`, { schedule: '30 2 25-31 3 SUN', timezone: 'Europe/Berlin' });
  expect([byDefault.statusCode, byDefault.json().detail]).toEqual([400, expect.stringContaining(berlin)]);
  expect((await inject('GET', `/api/v1/workflows/${name}/schedules/${id}`)).json()).toMatchObject({ schedule: '30 2 25-31 3 SUN', timezone: 'UTC' });
  expect((await inject('GET', `/api/v1/workflows/${name}`)).json()).toMatchObject({ schedule: null, timezone: 'UTC' });
  expect((await inject('GET', `/api/v1/workflows/${name}-ny`)).statusCode).toBe(404);
});

test('across daylight-saving changes nextRun is what Temporal will do: a skipped time has no run that day, a repeated one runs twice west of UTC and once east of it, a 30-minute gap moves it', async () => {
  const client = await stack.temporal.client();
  const times = async (schedule: string, timezone: string) => {
    const r = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule, timezone });
    expect([schedule, r.statusCode]).toEqual([schedule, 201]);
    const d = await client.schedule.getHandle(`schedule:${name}:${r.json().id}`).describe();
    const got = (await inject('GET', `/api/v1/workflows/${name}/schedules/${r.json().id}`)).json().nextRun;
    await inject('POST', `/api/v1/workflows/${name}/schedules/${r.json().id}/pause`);
    return { nextRun: got, temporal: d.info.nextActionTimes.map((t) => t.toISOString()) };
  };
  // autumn: 01:30 on the first Sunday of November in New York happens twice (EDT, then EST): 05:30 and 06:30 UTC
  const twice = await times('30 1 1-7 11 SUN', 'America/New_York');
  const [first, second] = twice.temporal;
  expect([twice.nextRun, first?.slice(10), second?.slice(0, 10), second?.slice(10)]).toEqual([first, 'T05:30:00.000Z', first?.slice(0, 10), 'T06:30:00.000Z']);
  expect(new Date(first as string).getUTCDay()).toBe(0);
  // east of UTC it runs once, at the second 02:30 (CET, 01:30 UTC) on the last Sunday of October in Berlin: Go's
  // time.Date gives the later of the two there, and Temporal's repeat only adds an hour to the first
  const berlin = await times('30 2 25-31 10 SUN', 'Europe/Berlin');
  const [once, nextYear] = berlin.temporal as [string, string];
  expect([berlin.nextRun, once.slice(10), wallClock(once, 'Europe/Berlin').slice(10), wallClock(nextYear, 'Europe/Berlin').slice(10)]).toEqual([once, 'T01:30:00.000Z', ' 02:30 Sun', ' 02:30 Sun']);
  expect(Number(nextYear.slice(0, 4))).toBe(Number(once.slice(0, 4)) + 1);
  // spring: 02:30 on every Sunday of March in Berlin runs on each but the last (02:00 becomes 03:00 that day)
  const spring = await times('30 2 * 3 SUN', 'Europe/Berlin');
  const walls = spring.temporal.map((t) => wallClock(t, 'Europe/Berlin'));
  expect([spring.nextRun, walls.every((w) => / 02:30 Sun$/.test(w)), walls.some((w) => Number(w.slice(8, 10)) >= 25)]).toEqual([spring.temporal[0], true, false]);
  // Lord Howe Island moves its clocks 30 minutes (02:00 → 02:30 on the first Sunday of October): 02:15 runs at 02:45
  const howe = await times('15 2 1-7 10 SUN', 'Australia/Lord_Howe');
  expect([howe.nextRun, wallClock(howe.temporal[0] as string, 'Australia/Lord_Howe').slice(10)]).toEqual([howe.temporal[0], ' 02:45 Sun']);
});
