/**
 * Scheduler parity with automagik-spark (issue 18 item 6), against real Temporal and a real worker: one-time schedules
 * (`now` and a date-time in a zone), several schedules per workflow each with its own input, re-running an execution.
 */
import { ACCEPTED_SCHEDULES } from '../../lib/scheduler/cron';
import { FAKE_FLOWS } from '../support/fakeFlowBuilder';
import { eventually } from '../support/harness';
import { schedulerStackForFile } from '../support/schedulerStack';

const sched = schedulerStackForFile();
const { inject } = sched;
const uniq = Math.random().toString(36).slice(2, 8);

interface Exec {
  id: string;
  status: string;
  trigger: string;
  scheduleId: string | null;
  retryOf: string | null;
  scheduledAt: string | null;
  input: unknown;
  tasks: { output: string }[];
}
const executions = async (workflow: string): Promise<Exec[]> => (await inject('GET', `/api/v1/executions?workflow=${workflow}&limit=100`)).json().executions;
const detail = async (id: string): Promise<Exec> => (await inject('GET', `/api/v1/executions/${id}`)).json();
const finished = (id: string) =>
  eventually(async () => {
    const e = await detail(id);
    return e.status !== 'running' && e;
  });

const createWorkflow = async (name: string, tasks: unknown[], extra: Record<string, unknown> = {}) => {
  const r = await inject('POST', '/api/v1/workflows', { name, tasks, ...extra });
  expect(r.statusCode).toBe(201);
};

// biome-ignore lint/suspicious/noTemplateCurlyInString: bash parameter expansion, not a JS template
const ECHO_INPUT = 'echo "in:${ARMADA_INPUT:-none}"';

describe('one-time schedules', () => {
  test('`now` runs once at once with its input, is listed with its type and is completed afterwards', async () => {
    const name = `once-now-${uniq}`;
    await createWorkflow(name, [{ name: 'echo', type: 'script', script: ECHO_INPUT }]);
    const created = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: 'now', input: 'hello' });
    expect(created.statusCode).toBe(201);
    const s = created.json();
    expect(s).toMatchObject({ workflow: name, type: 'one-time', isDefault: false, schedule: null, at: 'now', timezone: 'UTC', input: 'hello', enabled: true });
    expect(Date.parse(s.runAt)).toBeLessThanOrEqual(Date.now());

    const [run] = await eventually(async () => {
      const list = await executions(name);
      return list.length > 0 && list;
    });
    const e = await finished((run as Exec).id);
    expect(e).toMatchObject({ status: 'completed', trigger: 'schedule', scheduleId: s.id, input: 'hello' });
    expect(e.tasks[0]?.output).toBe('in:hello\n');

    const after = (await inject('GET', `/api/v1/workflows/${name}/schedules/${s.id}`)).json();
    expect(after).toMatchObject({ status: 'completed', nextRun: null });
    expect(after.lastRun).toEqual(expect.any(String));
    const listed = (await inject('GET', '/api/v1/schedules')).json().schedules.find((x: { id: string }) => x.id === s.id);
    expect(listed).toMatchObject({ workflow: name, type: 'one-time', status: 'completed' });
    // exactly one run: Temporal allowed one action, and a completed one-time schedule cannot be changed
    await new Promise((r) => setTimeout(r, 1500));
    expect(await executions(name)).toHaveLength(1);
    const patch = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${s.id}`, { input: 'again' });
    expect([patch.statusCode, patch.json()]).toEqual([409, { detail: `Schedule ${s.id} already ran` }]);
  });

  test('a date-time without offset is a wall-clock time in the schedule zone; it runs at that instant, then is completed', async () => {
    const name = `once-at-${uniq}`;
    await createWorkflow(name, [{ name: 'echo', type: 'script', script: ECHO_INPUT }]);
    const instant = Math.ceil((Date.now() + 6000) / 1000) * 1000;
    // the same instant as a wall-clock time in Asia/Kolkata (UTC+05:30, no daylight saving)
    const wall = new Date(instant + 330 * 60_000).toISOString().slice(0, 19);
    const r = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: wall, timezone: 'Asia/Kolkata', input: { n: 7 } });
    expect(r.statusCode).toBe(201);
    const s = r.json();
    expect(s).toMatchObject({ type: 'one-time', at: wall, timezone: 'Asia/Kolkata', runAt: new Date(instant).toISOString(), status: 'active' });
    expect(s.nextRun).toBe(new Date(instant).toISOString());
    const wf = (await inject('GET', `/api/v1/workflows/${name}`)).json();
    expect(wf).toMatchObject({ schedule: null, nextRun: new Date(instant).toISOString() }); // the earliest of its schedules

    const client = await sched.stack.temporal.client();
    const d = await client.schedule.getHandle(`schedule:${name}:${s.id}`).describe();
    expect(d.state.remainingActions).toBe(1);

    const [run] = await eventually(async () => {
      const list = await executions(name);
      return list.length > 0 && list;
    }, 30_000);
    const e = await finished((run as Exec).id);
    expect(e).toMatchObject({ status: 'completed', scheduleId: s.id, scheduledAt: new Date(instant).toISOString(), input: { n: 7 } });
    expect(e.tasks[0]?.output).toBe('in:{"n":7}\n');
    expect((await inject('GET', `/api/v1/workflows/${name}/schedules/${s.id}`)).json()).toMatchObject({ status: 'completed', nextRun: null });
    expect((await client.schedule.getHandle(`schedule:${name}:${s.id}`).describe()).state.remainingActions).toBe(0);
  });

  test('an offset wins over the zone; past, impossible and malformed times are 400s', async () => {
    const name = `once-bad-${uniq}`;
    await createWorkflow(name, [{ name: 't', type: 'script', script: 'true' }]);
    const post = (body: Record<string, unknown>) => inject('POST', `/api/v1/workflows/${name}/schedules`, body);
    const off = await post({ type: 'one-time', at: '2099-01-01T09:30:00+05:30', timezone: 'Europe/Paris', enabled: false });
    expect(off.statusCode).toBe(201);
    expect(off.json()).toMatchObject({ runAt: '2099-01-01T04:00:00.000Z', enabled: false, status: 'paused', nextRun: null });

    const bad = async (body: Record<string, unknown>, detail: string | RegExp) => {
      const res = await post(body);
      expect(res.statusCode).toBe(400);
      expect(res.json().detail).toMatch(detail);
    };
    await bad({ type: 'one-time', at: '2020-01-01T00:00:00Z' }, /^Time "2020-01-01T00:00:00Z" is in the past \(now is .*\); use now to run at once$/);
    await bad({ type: 'one-time', at: '2099-02-30T10:00' }, 'Invalid time "2099-02-30T10:00": not a date and time of the calendar');
    await bad({ type: 'one-time', at: 'tomorrow' }, /^Request body is invalid: at must match pattern/);
    await bad({ type: 'one-time', at: '2099-01-01T10:00', timezone: 'Mars/Olympus' }, 'Unknown time zone "Mars/Olympus": use an IANA name such as UTC or Europe/Paris');
    await bad({ type: 'one-time', at: 'now', enabled: false }, /^Request body is invalid: enabled/);
    await bad({ type: 'one-time' }, 'Request body is invalid: at is required');
    await bad({ type: 'cron', at: '2099-01-01T10:00', schedule: '* * * * *' }, 'Request body is invalid: at is not allowed here');
    await bad({ type: 'one-time', at: '2099-01-01T10:00', jitter: 5 }, 'Request body is invalid: jitter is not allowed here');
    // the cron string is Temporal's to judge (its own reason, prefixed with the expression), on every schedule path
    await bad({ type: 'cron', schedule: '61 * * * *' }, 'Invalid cron expression "61 * * * *": Minute is not in range [0-59]');
    await bad({ type: 'cron', schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', timezone: 'UTC' }, 'Invalid cron expression "CRON_TZ=Asia/Tokyo 0 9 * * *": its CRON_TZ= zone "Asia/Tokyo" is not the schedule\'s timezone "UTC"; name the zone once, in "timezone" or in the prefix');
    await bad({ type: 'cron', schedule: '0 9 * * *', timezone: 'Mars/Olympus' }, 'Unknown time zone "Mars/Olympus": use an IANA name such as UTC or Europe/Paris');
    // a string Temporal takes although it never fires (its schedule would sit `active` with no next run)
    await bad({ type: 'cron', schedule: '0 0 30 2 *' }, 'Invalid cron expression "0 0 30 2 *": it never fires: none of its months (February) has a day 30');
    // a year field is no accepted form (schedulerCronRule.test.ts), past years or not
    await bad({ type: 'cron', schedule: '0 9 * * * 2020' }, `Invalid cron expression "0 9 * * * 2020": it has 6 fields: a 6th field would be a year, which is not accepted; ${ACCEPTED_SCHEDULES}`);
    expect((await inject('GET', `/api/v1/workflows/${name}/schedules`)).json().schedules).toHaveLength(1); // rejected ones leave no row
    const tokyo = await post({ type: 'cron', schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', enabled: false });
    expect([tokyo.statusCode, tokyo.json().timezone]).toEqual([201, 'Asia/Tokyo']); // a CRON_TZ= prefix names the zone
    const badCron = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${tokyo.json().id}`, { schedule: '0 25 * * *' });
    expect([badCron.statusCode, badCron.json()]).toEqual([400, { detail: 'Invalid cron expression "0 25 * * *": Hour is not in range [0-23]' }]);
    const never = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${tokyo.json().id}`, { schedule: '0 0 31 4,6,9,11 *' });
    expect([never.statusCode, never.json()]).toEqual([400, { detail: 'Invalid cron expression "0 0 31 4,6,9,11 *": it never fires: none of its months (April, June, September, November) has a day 31' }]);
    expect((await inject('GET', `/api/v1/workflows/${name}/schedules/${tokyo.json().id}`)).json().schedule).toBe('CRON_TZ=Asia/Tokyo 0 9 * * *'); // unchanged
    const missing = await inject('POST', '/api/v1/workflows/nope/schedules', { type: 'one-time', at: 'now' });
    expect([missing.statusCode, missing.json()]).toEqual([404, { detail: 'Workflow not found' }]);
    const unknown = await inject('GET', `/api/v1/workflows/${name}/schedules/00000000-0000-4000-8000-000000000000`);
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { detail: 'Schedule not found' }]);
    const notUuid = await inject('POST', `/api/v1/workflows/${name}/schedules/not-a-uuid/pause`);
    expect([notUuid.statusCode, notUuid.json()]).toEqual([404, { detail: 'Schedule not found' }]);
    // a one-time schedule moves in time until it ran; cron fields do not apply to it
    const moved = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${off.json().id}`, { at: '2099-06-01T09:30', timezone: 'Asia/Kolkata' });
    expect(moved.json()).toMatchObject({ at: '2099-06-01T09:30', timezone: 'Asia/Kolkata', runAt: '2099-06-01T04:00:00.000Z' });
    const wrong = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${off.json().id}`, { schedule: '* * * * *' });
    expect([wrong.statusCode, wrong.json()]).toEqual([409, { detail: `"schedule" and "jitter" apply to cron schedules; schedule ${off.json().id} is a one-time schedule` }]);
    const toNow = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${off.json().id}`, { at: 'now' });
    expect(toNow.statusCode).toBe(400); // the schema: moving to now is a new schedule
  });
});

describe('several schedules per workflow', () => {
  test('two cron schedules with different inputs both fire; each is paused, resumed and deleted on its own', async () => {
    const name = `multi-${uniq}`;
    const source = (await inject('POST', '/api/v1/sources', { name: `fake-${uniq}`, source_type: 'flow-builder', url: sched.fake.url })).json();
    await createWorkflow(
      name,
      [
        { name: 'echo', type: 'script', script: ECHO_INPUT },
        { name: 'flow', type: 'flow', source: source.id, flow: 'Summarise', input: 'task default' },
      ],
      { schedule: '0 3 1 1 *', timezone: 'Europe/Paris' },
    );
    const add = async (input: unknown) => {
      const r = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '@every 2s', timezone: 'Asia/Kolkata', input });
      expect(r.statusCode).toBe(201);
      return r.json();
    };
    const a = await add('alpha');
    const b = await add({ beta: 2 });
    expect(a.id).not.toBe(b.id);

    const bySchedule = async () => {
      const list = await executions(name);
      const done = await Promise.all(list.filter((e) => e.status === 'completed').map((e) => detail(e.id)));
      return { a: done.filter((e) => e.scheduleId === a.id), b: done.filter((e) => e.scheduleId === b.id) };
    };
    const fired = await eventually(async () => {
      const r = await bySchedule();
      return r.a.length > 0 && r.b.length > 0 && r;
    }, 30_000);
    expect(fired.a[0]?.tasks[0]?.output).toBe('in:alpha\n');
    expect(fired.b[0]?.tasks[0]?.output).toBe('in:{"beta":2}\n');
    // the flow task got the schedule's input instead of its own
    const inputs = sched.fake.requests.filter((q) => q.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`).map((q) => (q.body as { input_value: string }).input_value);
    expect(inputs).toEqual(expect.arrayContaining(['alpha', '{"beta":2}']));
    expect(inputs).not.toContain('task default');

    // the workflow's own schedule is listed too, first, as its default
    const listed = (await inject('GET', `/api/v1/workflows/${name}/schedules`)).json().schedules;
    expect(listed.map((s: { id: string; isDefault: boolean }) => [s.isDefault, s.id === a.id || s.id === b.id])).toEqual([
      [true, false],
      [false, true],
      [false, true],
    ]);
    expect(listed[0]).toMatchObject({ type: 'cron', schedule: '0 3 1 1 *', timezone: 'Europe/Paris' });

    const paused = await inject('POST', `/api/v1/workflows/${name}/schedules/${a.id}/pause`);
    expect(paused.json()).toMatchObject({ id: a.id, enabled: false, status: 'paused', nextRun: null });
    const client = await sched.stack.temporal.client();
    expect((await client.schedule.getHandle(`schedule:${name}:${a.id}`).describe()).state.paused).toBe(true);
    expect((await client.schedule.getHandle(`schedule:${name}:${b.id}`).describe()).state.paused).toBe(false);
    expect((await client.schedule.getHandle(`schedule:${name}`).describe()).state.paused).toBe(false);
    const resumed = await inject('POST', `/api/v1/workflows/${name}/schedules/${a.id}/resume`);
    expect(resumed.json()).toMatchObject({ enabled: true, status: 'active', nextRun: expect.any(String) });
    const changed = await inject('PATCH', `/api/v1/workflows/${name}/schedules/${a.id}`, { schedule: '0 4 * * *', input: 'changed' });
    expect(changed.json()).toMatchObject({ schedule: '0 4 * * *', timezone: 'Asia/Kolkata', input: 'changed' });
    const action = (await client.schedule.getHandle(`schedule:${name}:${a.id}`).describe()).action as { args: { input: unknown }[] };
    expect(action.args[0]?.input).toBe('changed');

    for (const s of [a, b]) {
      const del = await inject('DELETE', `/api/v1/workflows/${name}/schedules/${s.id}`);
      expect(del.json()).toEqual({ id: s.id, workflow: name, deleted: true });
      await expect(client.schedule.getHandle(`schedule:${name}:${s.id}`).describe()).rejects.toThrow();
    }
    const left = (await inject('GET', `/api/v1/workflows/${name}/schedules`)).json().schedules;
    expect(left.map((s: { isDefault: boolean }) => s.isDefault)).toEqual([true]);
    // the spec's routes still act on the default schedule
    expect((await inject('POST', `/api/v1/schedules/${name}/pause`)).json()).toMatchObject({ workflow: name, isDefault: true, enabled: false });
    // deleting the workflow deletes every schedule it has
    const extra = await add('gone with the workflow');
    expect((await inject('DELETE', `/api/v1/workflows/${name}`)).json()).toEqual({ name, deleted: true });
    await expect(client.schedule.getHandle(`schedule:${name}:${extra.id}`).describe()).rejects.toThrow();
    await expect(client.schedule.getHandle(`schedule:${name}`).describe()).rejects.toThrow();
  });
});

describe('re-running an execution', () => {
  test('retry starts a new execution with the same input linked to the original; 404 and 409 in {detail}', async () => {
    const name = `retry-${uniq}`;
    const marker = `/tmp/armada-retry-${uniq}`;
    // fails the first time, succeeds the second
    await createWorkflow(name, [{ name: 'flaky', type: 'script', script: `${ECHO_INPUT}; if [ -e ${marker} ]; then rm ${marker}; else touch ${marker}; exit 3; fi` }]);
    const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: 'now', input: 'same input' })).json();
    const [first] = await eventually(async () => {
      const list = await executions(name);
      return list.length > 0 && list;
    });
    const original = await finished((first as Exec).id);
    expect(original).toMatchObject({ status: 'failed', scheduleId: s.id, input: 'same input', error: 'Task flaky failed: exit code 3' });
    // the scheduled run (lean run) ends Failed in Temporal after its row is written, carrying the same error
    const { rows } = await sched.stack.db.query('SELECT temporal_workflow_id FROM scheduler_executions WHERE id = $1', [original.id]);
    const run = (await sched.stack.temporal.client()).workflow.getHandle(rows[0].temporal_workflow_id);
    await expect(run.result()).rejects.toMatchObject({ cause: { type: 'ScheduledRunFailed', message: 'Task flaky failed: exit code 3', nonRetryable: true } });
    expect((await run.describe()).status.name).toBe('FAILED');

    const retry = await inject('POST', `/api/v1/executions/${original.id}/retry`);
    expect(retry.statusCode).toBe(201);
    expect(retry.json()).toMatchObject({ workflow: name, status: 'running', retryOf: original.id });
    const again = await finished(retry.json().executionId);
    expect(again).toMatchObject({ status: 'completed', trigger: 'manual', retryOf: original.id, scheduleId: null, input: 'same input' });
    expect(again.tasks[0]?.output).toBe('in:same input\n');
    const listed = (await executions(name)).find((e) => e.id === again.id);
    expect(listed?.retryOf).toBe(original.id);
    const logs = (await inject('GET', `/api/v1/executions/${again.id}/logs`)).json().logs;
    expect(logs[0].message).toBe(`Execution started (manual, retry of ${original.id})`);

    const unknown = await inject('POST', '/api/v1/executions/00000000-0000-4000-8000-000000000000/retry');
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { detail: 'Execution not found' }]);
    const notUuid = await inject('POST', '/api/v1/executions/nope/retry');
    expect([notUuid.statusCode, notUuid.json()]).toEqual([404, { detail: 'Execution not found' }]);

    const slow = `slow-${uniq}`;
    await createWorkflow(slow, [{ name: 'sleep', type: 'script', script: 'sleep 30' }]);
    const running = (await inject('POST', `/api/v1/workflows/${slow}/run`)).json().executionId;
    const busy = await inject('POST', `/api/v1/executions/${running}/retry`);
    expect([busy.statusCode, busy.json()]).toEqual([409, { detail: `Execution ${running} is still running` }]);
    await inject('POST', `/api/v1/executions/${running}/stop`);
  });
});
