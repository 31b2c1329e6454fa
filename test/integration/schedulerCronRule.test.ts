/**
 * The accepted schedule expressions (docs/scheduler.md#schedule-expressions): 5 fields, the macros, `@every` of at least
 * 1s. An outside fuzzer found Temporal taking `* * * * * * *` (seconds and years: every second) while it refused
 * `@every 1ns`; every route taking a `schedule` now refuses seconds and year fields, intervals under a second and
 * odd white space with a 400 saying what is wrong and what is accepted, before anything is stored or sent to
 * Temporal. A schedule stored before the rule keeps working: it is listed and read as written, and a PATCH of its
 * other fields keeps it.
 */
import { ScheduleNotFoundError } from '@temporalio/client';
import { targetOf, timingOf } from '../../api/scheduler/scheduleViews';
import { getSchedule } from '../../lib/db/schedulerSchedules';
import { ACCEPTED_SCHEDULES, SCHEDULE_EXPRESSION_PATTERN } from '../../lib/scheduler/cron';
import { updateSchedule } from '../../lib/scheduler/temporalSchedules';
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;
const uniq = Math.random().toString(36).slice(2, 8);
const name = `rule-${uniq}`;
const TASKS = [{ name: 't', type: 'script', script: 'true' }];

beforeAll(async () => {
  stack = await startSchedulerStack({ worker: false });
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: TASKS })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const count = async (table: string): Promise<number> => (await stack.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n ?? 0;

/** The ids of this file's Temporal Schedules (those of `rule-<uniq>…` workflows). */
async function temporalIds(): Promise<string[]> {
  const client = await stack.temporal.client();
  const ids: string[] = [];
  for await (const s of client.schedule.list()) if (s.scheduleId.startsWith(`schedule:${name}`)) ids.push(s.scheduleId);
  return ids;
}

/** Each refused expression and what its 400 says is wrong (then what is accepted). */
const REFUSED: [string, string][] = [
  ['* * * * * * *', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
  ['0-59 * * * * * *', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
  ['*/1 * * * * * *', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
  ['0-59/1 0-59 0-23 * * * *', 'it has 7 fields: a first field of seconds and a last of years are not accepted'],
  ['30 0 9 * * *', 'it has 6 fields: a 6th field would be a year, which is not accepted'],
  ['0 9 * * * 2030', 'it has 6 fields: a 6th field would be a year, which is not accepted'],
  ['@every 1ns', 'its interval 1ns is shorter than 1s, the shortest interval between two runs'],
  ['@every 500ms', 'its interval 500ms is shorter than 1s, the shortest interval between two runs'],
  ['@every 0s', 'its interval 0s is shorter than 1s, the shortest interval between two runs'],
  // Temporal keeps whole seconds of an interval: 1.5s ran every second
  ['@every 1.5s', 'its interval 1.5s is not a whole number of seconds (Temporal counts whole seconds: it would run every 1s)'],
  ['@every 10m/90.5s', 'its offset 90.5s is not a whole number of seconds (Temporal counts whole seconds: it would use 90s)'],
  ['@every 2562048h', "its interval 2562048h is longer than Temporal's longest duration (2562047h, about 292 years)"],
  // Temporal drops a zone prefix on an interval
  ['CRON_TZ=Asia/Tokyo @every 5m', 'a CRON_TZ= zone does not apply to "@every" (Temporal drops it): an interval counts from the Unix epoch, the same instants in every zone'],
  ['* * *', 'it has 3 fields'],
  ['0\t9 * * *', 'it holds a tab (U+0009): only spaces separate its parts'],
  ['0 9 * * *\n* * * * *', 'it holds a line feed (U+000A): only spaces separate its parts'],
  ['0\u00a09 * * *', 'it holds a no-break space (U+00A0): only spaces separate its parts'],
  [' 0 9 * * *', 'it starts or ends with a space'],
  ['@every5s', '"@every" must be followed by one space and a duration with its unit, such as 30s, 5m or 1h30m'],
  ['@DAILY', '"@DAILY" is not a macro'],
];
/** The first second a described Schedule's calendar fires at. */
const secondOf = (d: { spec: { calendars?: { second?: { start: number }[] }[] } }): number | undefined => d.spec.calendars?.[0]?.second?.[0]?.start;
const detailOf = (expr: string, why: string) => ({ detail: `Invalid cron expression ${JSON.stringify(expr)}: ${why}; ${ACCEPTED_SCHEDULES}` });

test('every route taking a schedule refuses the same expressions with a 400 saying why; nothing is stored or scheduled', async () => {
  const existing = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 9 * * *', enabled: false });
  expect(existing.statusCode).toBe(201);
  const id = existing.json().id as string;
  const [workflows, schedules, before] = [await count('scheduler_workflows'), await count('scheduler_schedules'), await temporalIds()];
  for (const [expr, why] of REFUSED) {
    const answers = [
      await inject('POST', '/api/v1/workflows', { name: `${name}-bad`, schedule: expr, tasks: TASKS }),
      await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: expr }),
      await inject('PATCH', `/api/v1/schedules/${name}`, { schedule: expr }),
      await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { schedule: expr }),
    ];
    for (const res of answers) expect([expr, res.statusCode, res.json()]).toEqual([expr, 400, detailOf(expr, why)]);
  }
  expect([await count('scheduler_workflows'), await count('scheduler_schedules')]).toEqual([workflows, schedules]);
  expect((await inject('GET', `/api/v1/workflows/${name}-bad`)).statusCode).toBe(404);
  // the default schedule got no cron (so no Temporal Schedule), the other one kept its own
  expect((await inject('GET', `/api/v1/workflows/${name}`)).json().schedule).toBeNull();
  expect((await inject('GET', `/api/v1/workflows/${name}/schedules/${id}`)).json().schedule).toBe('0 9 * * *');
  const client = await stack.temporal.client();
  await expect(client.schedule.getHandle(`schedule:${name}`).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  await expect(client.schedule.getHandle(`schedule:${name}-bad`).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
  expect((await temporalIds()).filter((t) => !before.includes(t))).toEqual([]);
});

test('an expression past 200 characters is the schema\'s 400 on every route, not echoed back', async () => {
  const existing = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 9 * * *', enabled: false });
  for (const expr of [`0 9 * * * # ${'x'.repeat(200)}`, '* '.repeat(5000)]) {
    const answers = [
      await inject('POST', '/api/v1/workflows', { name: `${name}-long`, schedule: expr, tasks: TASKS }),
      await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: expr }),
      await inject('PATCH', `/api/v1/schedules/${name}`, { schedule: expr }),
      await inject('PATCH', `/api/v1/workflows/${name}/schedules/${existing.json().id}`, { schedule: expr }),
    ];
    for (const res of answers) expect([res.statusCode, res.json()]).toEqual([400, { detail: 'Request body is invalid: schedule must NOT have more than 200 characters' }]);
  }
  expect((await inject('GET', `/api/v1/workflows/${name}-long`)).statusCode).toBe(404);
  expect((await inject('GET', `/api/v1/workflows/${name}/schedules/${existing.json().id}`)).json().schedule).toBe('0 9 * * *');
});

test('a one-time schedule takes no expression: its `at` may name seconds (it runs once)', async () => {
  const withCron = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: '2099-01-01T09:00:30Z', schedule: '* * * * * * *' });
  // the expression is refused first, as on every route
  expect([withCron.statusCode, withCron.json()]).toEqual([400, detailOf('* * * * * * *', REFUSED[0]?.[1] as string)]);
  const once = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: '2099-01-01T09:00:30Z', enabled: false });
  expect([once.statusCode, once.json().runAt]).toEqual([201, '2099-01-01T09:00:30.000Z']);
  const patched = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${once.json().id}`, { schedule: '0 9 * * *' });
  expect([patched.statusCode, patched.json().detail]).toEqual([409, `"schedule" and "jitter" apply to cron schedules; schedule ${once.json().id} is a one-time schedule`]);
});

test('accepted forms are created in Temporal as before', async () => {
  const client = await stack.temporal.client();
  for (const expr of ['*/5 0-6,22 1 jan-mar MON-FRI', '0  9 * * *', '@hourly', '@every 1s', '@every 1.5m', '@every 10m/2m', '0 9 * * * # mornings', 'CRON_TZ=Asia/Tokyo 0 9 * * *', 'TZ=America/New_York @daily', '0 9 * * MON # ticket 1#2']) {
    const res = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: expr, enabled: false });
    expect([expr, res.statusCode, res.json().schedule]).toEqual([expr, 201, expr]);
    const d = await client.schedule.getHandle(`schedule:${name}:${res.json().id}`).describe();
    expect([expr, d.state.paused, d.info.nextActionTimes.length > 0]).toEqual([expr, true, true]);
  }
  // the values stay Temporal's to judge, in its words
  const minute = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '61 * * * *' });
  expect([minute.statusCode, minute.json()]).toEqual([400, { detail: 'Invalid cron expression "61 * * * *": Minute is not in range [0-59]' }]);
});

test("values out of Temporal's ranges are 400s in its words, Quartz's L and W and steps that are no number in Armada's; nothing is stored", async () => {
  const before = await count('scheduler_schedules');
  const TEMPORAL: [string, string][] = [
    ['60 * * * *', 'Minute is not in range [0-59]'],
    ['0 24 * * *', 'Hour is not in range [0-23]'],
    ['0 0 32 * *', 'DayOfMonth is not in range [1-31]'],
    ['0 0 0 * *', 'DayOfMonth is not in range [1-31]'],
    ['0 0 1 13 *', 'Month is not in range [1-12]'],
    ['0 0 * * 8', 'DayOfWeek is not in range [0-7]'],
    ['*/0 * * * *', 'Minute has invalid Step'],
    ['5-1 * * * *', 'Minute End is before Start or not in range [0-59]'],
    ['1/2/3 * * * *', 'Minute has too many slashes'],
    ['1-2-3 * * * *', 'Minute has too many dashes'],
    ['0 0 * * fri-mon', 'DayOfWeek End is before Start or not in range [0-7]'],
    ['@every 10m/10m', 'phase cannot be greater than Interval'],
  ];
  for (const [expr, why] of TEMPORAL) {
    const res = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: expr });
    expect([expr, res.statusCode, res.json()]).toEqual([expr, 400, { detail: `Invalid cron expression ${JSON.stringify(expr)}: ${why}` }]);
  }
  const ARMADA: [string, string][] = [
    ['0 0 L * *', '"L" (the last day of the month) is not supported: the day of the month takes numbers 1-31 (with *, ranges, steps and lists)'],
    ['0 0 15W * *', '"15W" (the weekday nearest a day of the month) is not supported: the day of the month takes numbers 1-31 (with *, ranges, steps and lists)'],
    ['0 0 * * 5L', '"5L" (the last given weekday of a month) is not supported: the day of the week takes 0-7 (0 and 7 are Sunday) or names such as MON (with *, ranges, steps and lists)'],
    // Temporal said `strconv.Atoi: parsing "x": invalid syntax`
    ['*/x * * * *', 'the step in "*/x" (the minute) is not a whole number: a step after "/" is a whole number of at least 1'],
    ['0 */99999999999999999999 * * *', 'the step in "*/99999999999999999999" (the hour) is too large: a step after "/" is a whole number of at least 1'],
  ];
  for (const [expr, why] of ARMADA) {
    for (const res of [
      await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: expr }),
      await inject('PATCH', `/api/v1/schedules/${name}`, { schedule: expr }),
    ]) {
      expect([expr, res.statusCode, res.json()]).toEqual([expr, 400, { detail: `Invalid cron expression ${JSON.stringify(expr)}: ${why}` }]);
    }
  }
  expect(await count('scheduler_schedules')).toBe(before);
});

test('what is accepted fires as documented: 7 and 0 are Sunday, names by prefix, intervals of whole seconds from the epoch', async () => {
  const client = await stack.temporal.client();
  const described = async (schedule: string, timezone = 'UTC') => {
    const res = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule, timezone, enabled: false });
    expect([schedule, res.statusCode]).toEqual([schedule, 201]);
    return client.schedule.getHandle(`schedule:${name}:${res.json().id}`).describe();
  };
  const days = (times: Date[]) => [...new Set(times.map((t) => `${t.getUTCDay()} ${t.toISOString().slice(11)}`))];
  for (const sunday of ['0 0 * * 7', '0 0 * * 0', '0 0 * * SUN', '0 0 * * su', '0 0 * * 6-7/1 # weekend']) {
    const d = await described(sunday);
    const expected = sunday.includes('6-7') ? ['6 00:00:00.000Z', '0 00:00:00.000Z'] : ['0 00:00:00.000Z'];
    expect([sunday, days(d.info.nextActionTimes).sort()]).toEqual([sunday, expected.sort()]);
  }
  const months = await described('0 12 1 janu,JULY,sep tues');
  for (const t of months.info.nextActionTimes) expect([[0, 6, 8].includes(t.getUTCMonth()), t.getUTCDate(), t.getUTCDay(), t.getUTCHours()]).toEqual([true, 1, 2, 12]);
  // an interval of whole seconds: Temporal's spec is exactly it, and its times are multiples of it from the epoch
  const every = await described('@every 1.5m', 'Asia/Kolkata');
  expect(every.spec.intervals?.map((i) => [i.every, i.offset ?? 0])).toEqual([[90_000, 0]]);
  const times = every.info.nextActionTimes.map((t) => t.getTime());
  expect([times.length > 2, times.every((t) => t % 90_000 === 0), times.slice(1).every((t, i) => t - (times[i] as number) === 90_000)]).toEqual([true, true, true]);
  const longest = await described('@every 2562047h');
  expect(longest.spec.intervals?.[0]?.every).toBe(2562047 * 3_600_000);
});

test('a schedule stored before the rule (7 fields) is still read and listed, and a PATCH of its other fields keeps it', async () => {
  const created = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 9 * * *', timezone: 'UTC', enabled: false });
  const id = created.json().id as string;
  // as an older version stored it: the row and its Temporal Schedule both with seconds (09:00:30 daily)
  const old = '30 0 9 * * * *';
  await stack.db.query('UPDATE scheduler_schedules SET cron = $1 WHERE id = $2', [old, id]);
  const row = await getSchedule(stack.db, name, id);
  const client = await stack.temporal.client();
  await updateSchedule(client, targetOf(row as NonNullable<typeof row>), timingOf(row as NonNullable<typeof row>));

  expect((await inject('GET', `/api/v1/workflows/${name}/schedules/${id}`)).json()).toMatchObject({ schedule: old, status: 'paused' });
  expect((await inject('GET', '/api/v1/schedules')).json().schedules.find((s: { id: string }) => s.id === id)).toMatchObject({ schedule: old });
  const resumed = await inject('POST', `/api/v1/workflows/${name}/schedules/${id}/resume`);
  expect([resumed.statusCode, resumed.json().nextRun]).toEqual([200, expect.stringMatching(/T09:00:30\.000Z$/)]);
  const other = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { timezone: 'Europe/Paris', input: { k: 1 } });
  expect([other.statusCode, other.json()]).toEqual([200, expect.objectContaining({ schedule: old, timezone: 'Europe/Paris', input: { k: 1 } })]);
  const d = await client.schedule.getHandle(`schedule:${name}:${id}`).describe();
  expect([d.spec.timezone, (d.info.nextActionTimes[0] as Date).getUTCSeconds()]).toEqual(['Europe/Paris', 30]);
  const jitter = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { jitter: 5 });
  expect([jitter.statusCode, jitter.json().schedule, jitter.json().jitter]).toEqual([200, old, 5]);
  expect((await client.schedule.getHandle(`schedule:${name}:${id}`).describe()).spec.jitter).toBe(5000);
  // giving it its own expression again is refused like any other; an accepted one replaces it
  const same = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { schedule: old });
  expect([same.statusCode, same.json()]).toEqual([400, detailOf(old, REFUSED[0]?.[1] as string)]);
  const replaced = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${id}`, { schedule: '0 9 * * *' });
  expect([replaced.statusCode, replaced.json().schedule]).toEqual([200, '0 9 * * *']);
  const now = await client.schedule.getHandle(`schedule:${name}:${id}`).describe();
  expect([now.spec.jitter, secondOf(now), secondOf(d)]).toEqual([5000, 0, 30]); // the jitter kept, the seconds field gone
  await inject('POST', `/api/v1/workflows/${name}/schedules/${id}/pause`);
});

test('the OpenAPI document gives every schedule field the accepted form and says it', async () => {
  const doc = (await inject('GET', '/api/v1/openapi.json')).json();
  const bodyOf = (path: string, method: string) => {
    const schema = doc.paths[path][method].requestBody.content['application/json'].schema;
    return schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
  };
  const fields = [
    bodyOf('/api/v1/workflows', 'post').properties.schedule,
    bodyOf('/api/v1/workflows/{name}/schedules', 'post').properties.schedule,
    bodyOf('/api/v1/schedules/{workflow}', 'patch').properties.schedule,
    bodyOf('/api/v1/workflows/{name}/schedules/{id}', 'patch').properties.schedule,
  ];
  for (const f of fields) {
    const s = f.anyOf ? f.anyOf.find((x: { type?: string }) => x.type === 'string') : f;
    expect([s.pattern, s.description]).toEqual([SCHEDULE_EXPRESSION_PATTERN, expect.stringContaining(ACCEPTED_SCHEDULES)]);
  }
});
