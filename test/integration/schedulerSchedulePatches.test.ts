/**
 * Concurrent PATCHes of one schedule: each is applied on top of the committed state, so the row and the Temporal
 * Schedule agree however the requests interleave.
 */
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
const uniq = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  stack = await startSchedulerStack();
});
afterAll(async () => {
  await closeSchedulerStack(stack);
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => schedulerInject(stack)(method, url, payload);

/** What Temporal holds of a cron schedule: its zone, its jitter in seconds and the hour its daily cron fires. */
async function temporalTiming(temporalId: string): Promise<{ timezone: string; jitter: number; hour: number | undefined }> {
  const d = await (await stack.temporal.client()).schedule.getHandle(temporalId).describe();
  // Temporal keeps a cron string as a structured calendar: `0 <h> * * *` is hour h
  return { timezone: d.spec.timezone as string, jitter: Math.round((d.spec.jitter ?? 0) / 1000), hour: d.spec.calendars?.[0]?.hour?.[0]?.start };
}

describe('concurrent schedule changes', () => {
  test('three PATCHes at once (zone, cron, jitter), five rounds: the row and the Temporal Schedule agree after each', async () => {
    const name = `race-${uniq}`;
    // paused, so nothing fires while the test changes it
    const created = await inject('POST', '/api/v1/workflows', { name, schedule: '0 1 * * *', enabled: false, tasks: [{ name: 't', type: 'script', script: 'true' }] });
    expect(created.statusCode).toBe(201);
    const zones = ['Europe/Paris', 'Asia/Tokyo', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata'];
    for (const [round, timezone] of zones.entries()) {
      const answers = await Promise.all([
        inject('PATCH', `/api/v1/schedules/${name}`, { timezone }),
        inject('PATCH', `/api/v1/schedules/${name}`, { schedule: `0 ${round + 2} * * *` }),
        inject('PATCH', `/api/v1/schedules/${name}`, { jitter: (round + 1) * 7 }),
      ]);
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
      const row = (await inject('GET', `/api/v1/workflows/${name}`)).json();
      expect(row).toMatchObject({ schedule: `0 ${round + 2} * * *`, timezone, jitter: (round + 1) * 7 });
      expect([round, await temporalTiming(`schedule:${name}`)]).toEqual([round, { timezone: row.timezone, jitter: row.jitter, hour: round + 2 }]);
    }
  });

  test('PATCHes of an extra cron schedule at once agree too', async () => {
    const name = `race-extra-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
    const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 1 * * *', enabled: false })).json();
    const temporalId = `schedule:${name}:${s.id}`;
    for (const [round, timezone] of ['Europe/Berlin', 'Asia/Seoul', 'America/Chicago'].entries()) {
      const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
      const answers = await Promise.all([
        inject('PATCH', url, { timezone }),
        inject('PATCH', url, { schedule: `0 ${round + 5} * * *` }),
        inject('PATCH', url, { jitter: round + 3 }),
        inject('PATCH', url, { input: { round } }),
      ]);
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200]);
      const row = (await inject('GET', url)).json();
      expect(row).toMatchObject({ schedule: `0 ${round + 5} * * *`, timezone, jitter: round + 3, input: { round } });
      expect(await temporalTiming(temporalId)).toEqual({ timezone, jitter: round + 3, hour: round + 5 });
      // the runs it starts get the row's input
      const d = await (await stack.temporal.client()).schedule.getHandle(temporalId).describe();
      expect(d.action.type === 'startWorkflow' && d.action.args?.[0]).toMatchObject({ input: { round } });
    }
  });

  test('two PATCHes giving a workflow without a schedule its first cron at once: both 200, one Temporal Schedule that agrees', async () => {
    const name = `race-first-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name, enabled: false, tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
    const answers = await Promise.all([
      inject('PATCH', `/api/v1/schedules/${name}`, { schedule: '0 3 * * *' }),
      inject('PATCH', `/api/v1/schedules/${name}`, { schedule: '0 4 * * *', timezone: 'Asia/Tokyo' }),
    ]);
    expect(answers.map((a) => [a.statusCode, a.json().detail])).toEqual([
      [200, undefined],
      [200, undefined],
    ]);
    const row = (await inject('GET', `/api/v1/workflows/${name}`)).json();
    const t = await temporalTiming(`schedule:${name}`);
    expect(t).toEqual({ timezone: row.timezone, jitter: 0, hour: Number(row.schedule.split(' ')[1]) });
  });
});
