import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { LOCAL_START_MS } from '../../activities/scheduler/executionProgress';
import { ACCEPTED_SCHEDULES } from '../../lib/scheduler/cron';
import { groupAlive } from '../../lib/process/processGroup';
import { recordHistory } from '../support/attemptHelpers';
import { FAKE_FLOWS, startFakeFlowBuilder } from '../support/fakeFlowBuilder';
import { eventually, ensureTemporalRuntime } from '../support/harness';
import { schedulerStackForFile } from '../support/schedulerStack';

const sched = schedulerStackForFile();
const { inject } = sched;
const uniq = Math.random().toString(36).slice(2, 8);
// workflowRunWorkflow calls the worker's `scheduler` sink (never on replay): registered so the replay knows it
const REPLAY_SINKS = { scheduler: { prefetchDefinition: { fn() {} } } };

interface Exec {
  id: string;
  status: string;
  trigger: string;
  startedAt: string;
  completedAt: string | null;
}
const executions = async (workflow: string): Promise<Exec[]> => (await inject('GET', `/api/v1/executions?workflow=${workflow}&limit=100`)).json().executions;

describe('scheduler workflows, schedules and executions', () => {
  test('an every-minute cron in Asia/Kolkata shows the right nextRun; the accepted forms are created, Temporal\'s rejections of values are 400s in its words', async () => {
    const name = `kolkata-${uniq}`;
    const before = Date.now();
    const r = await inject('POST', '/api/v1/workflows', {
      name,
      description: 'every minute in India',
      schedule: '* * * * *',
      timezone: 'Asia/Kolkata',
      tasks: [{ name: 'hello', type: 'script', script: 'echo hi' }],
    });
    expect(r.statusCode).toBe(201);
    expect(r.json().status).toBe('created');
    const next = new Date(r.json().nextRun);
    const expected = Math.floor(before / 60_000) * 60_000 + 60_000;
    expect([expected, expected + 60_000]).toContain(next.getTime());
    // pause it at once so it does not run during the rest of the file
    expect((await inject('POST', `/api/v1/schedules/${name}/pause`)).json()).toMatchObject({ workflow: name, enabled: false, nextRun: null });

    // 09:30 in Kolkata is 04:00 UTC; a partial PATCH keeps the zone
    const patched = await inject('PATCH', `/api/v1/schedules/${name}`, { schedule: '30 9 * * *' });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ workflow: name, schedule: '30 9 * * *', timezone: 'Asia/Kolkata', enabled: false });
    const resumed = await inject('POST', `/api/v1/schedules/${name}/resume`);
    expect(resumed.json().enabled).toBe(true);
    const at = new Date(resumed.json().nextRun);
    expect([at.getUTCHours(), at.getUTCMinutes(), at.getUTCSeconds()]).toEqual([4, 0, 0]);
    expect(at.getTime() - Date.now()).toBeLessThanOrEqual(86_400_000);
    const zoneOnly = await inject('PATCH', `/api/v1/schedules/${name}`, { timezone: 'America/New_York' });
    expect(zoneOnly.json()).toMatchObject({ schedule: '30 9 * * *', timezone: 'America/New_York' });
    const list = (await inject('GET', '/api/v1/schedules')).json().schedules;
    expect(list.find((s: { workflow: string }) => s.workflow === name)).toMatchObject({ schedule: '30 9 * * *', timezone: 'America/New_York', enabled: true });
    const wf = (await inject('GET', '/api/v1/workflows')).json().workflows.find((w: { name: string }) => w.name === name);
    expect(wf).toMatchObject({ schedule: '30 9 * * *', timezone: 'America/New_York', enabled: true, lastRun: null });
    expect(typeof wf.nextRun).toBe('string');
    await inject('POST', `/api/v1/schedules/${name}/pause`);

    // the accepted forms (created paused, so nothing fires): 5 fields, macros, @every in days, comments (6 and 7
    // fields are refused: schedulerCronRule.test.ts)
    const client = await sched.stack.temporal.client();
    const forms = ['0 9 * * 7', '*/5 0-6,22 1 jan-mar MON-FRI', '@every 10m/2m', '@daily', '0 0 1 */2 *', '@every 1d', '0 9 * * * # mornings'];
    for (const [i, cron] of forms.entries()) {
      const res = await inject('POST', '/api/v1/workflows', { name: `ok-${i}-${uniq}`, schedule: cron, timezone: 'Europe/Paris', enabled: false, jitter: 30, tasks: [{ name: 't', type: 'script', script: 'true' }] });
      expect([cron, res.statusCode, res.json()]).toEqual([cron, 201, { name: `ok-${i}-${uniq}`, status: 'created', nextRun: null }]);
      const d = await client.schedule.getHandle(`schedule:ok-${i}-${uniq}`).describe();
      expect([d.state.paused, d.spec.jitter, d.spec.timezone, d.policies.overlap]).toEqual([true, 30_000, 'Europe/Paris', 'SKIP']);
      expect(d.info.nextActionTimes.length).toBeGreaterThan(0);
    }
    const jit = await inject('PATCH', `/api/v1/schedules/ok-0-${uniq}`, { jitter: 5 });
    expect(jit.json()).toMatchObject({ schedule: '0 9 * * 7', timezone: 'Europe/Paris', jitter: 5, enabled: false });
    expect((await client.schedule.getHandle(`schedule:ok-0-${uniq}`).describe()).spec.jitter).toBe(5000);

    // a CRON_TZ= prefix names the zone when none is given
    const tokyo = await inject('POST', '/api/v1/workflows', { name: `tz-${uniq}`, schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', enabled: false, tasks: [{ name: 't', type: 'script', script: 'true' }] });
    expect([tokyo.statusCode, tokyo.json().status]).toEqual([201, 'created']);
    expect((await inject('GET', `/api/v1/workflows/tz-${uniq}`)).json()).toMatchObject({ schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', timezone: 'Asia/Tokyo' });
    const tokyoNext = (await client.schedule.getHandle(`schedule:tz-${uniq}`).describe()).info.nextActionTimes[0] as Date;
    expect([tokyoNext.getUTCHours(), tokyoNext.getUTCMinutes()]).toEqual([0, 0]); // 09:00 in Tokyo

    const bad = async (body: Record<string, unknown>, detail: string) => {
      const res = await inject('POST', '/api/v1/workflows', { name: `bad-${uniq}`, tasks: [{ name: 't', type: 'script', script: 'true' }], ...body });
      expect([res.statusCode, res.json()]).toEqual([400, { detail }]);
    };
    // Temporal's own reasons (server 1.32) for the values, prefixed with the expression; the form is Armada's
    await bad({ schedule: '61 * * * *' }, 'Invalid cron expression "61 * * * *": Minute is not in range [0-59]');
    await bad({ schedule: '* * *' }, `Invalid cron expression "* * *": it has 3 fields; ${ACCEPTED_SCHEDULES}`);
    await bad({ schedule: '0 9 * * mon-fry' }, 'Invalid cron expression "0 9 * * mon-fry": DayOfWeek End is before Start or not in range [0-7]');
    await bad({ schedule: '@every 0s' }, `Invalid cron expression "@every 0s": its interval 0s is shorter than 1s, the shortest interval between two runs; ${ACCEPTED_SCHEDULES}`);
    await bad({ schedule: 'CRON_TZ=Asia/Tokyo 0 9 * * *', timezone: 'UTC' }, 'Invalid cron expression "CRON_TZ=Asia/Tokyo 0 9 * * *": its CRON_TZ= zone "Asia/Tokyo" is not the schedule\'s timezone "UTC"; name the zone once, in "timezone" or in the prefix');
    await bad({ schedule: '0 9 * * *', timezone: 'Mars/Olympus' }, 'Unknown time zone "Mars/Olympus": use an IANA name such as UTC or Europe/Paris');
    // zone names are case-sensitive in Temporal (Go's tz database) though not in the runtime's Intl: said as a zone
    await bad({ schedule: '0 9 * * *', timezone: 'utc' }, 'Unknown time zone "utc": use an IANA name such as UTC or Europe/Paris (names are case-sensitive: "UTC")');
    await bad({ schedule: '0 9 * * *', timezone: 'europe/paris' }, 'Unknown time zone "europe/paris": use an IANA name such as UTC or Europe/Paris (names are case-sensitive: "Europe/Paris")');
    await bad({ schedule: 'CRON_TZ=asia/tokyo 0 9 * * *' }, 'Unknown time zone "asia/tokyo": use an IANA name such as UTC or Europe/Paris (names are case-sensitive: "Asia/Tokyo")');
    // a zone the runtime knows and Temporal does not (withdrawn names): Temporal's refusal, said as a zone too
    await bad({ schedule: '0 9 * * *', timezone: 'US/Pacific-New' }, 'Unknown time zone "US/Pacific-New": use an IANA name such as UTC or Europe/Paris');
    // `#` starts a comment in Temporal's cron: MON#2 ("the second Monday") would silently run every Monday
    await bad({ schedule: '0 9 * * MON#2' }, 'Invalid cron expression "0 9 * * MON#2": "MON#2" is not supported (the nth weekday of a month); "#" starts a comment here, so it would run on every MON');
    await bad({ schedule: '0 9 * * 1#1' }, 'Invalid cron expression "0 9 * * 1#1": "1#1" is not supported (the nth weekday of a month); "#" starts a comment here, so it would run on every 1');
    expect((await inject('GET', `/api/v1/workflows/bad-${uniq}`)).statusCode).toBe(404); // a rejected schedule leaves no workflow behind
    const badPatch = await inject('PATCH', `/api/v1/schedules/${name}`, { timezone: 'Nowhere/City' });
    expect([badPatch.statusCode, badPatch.json()]).toEqual([400, { detail: 'Unknown time zone "Nowhere/City": use an IANA name such as UTC or Europe/Paris' }]);
    const badCronPatch = await inject('PATCH', `/api/v1/schedules/${name}`, { schedule: '0 25 * * *' });
    expect([badCronPatch.statusCode, badCronPatch.json()]).toEqual([400, { detail: 'Invalid cron expression "0 25 * * *": Hour is not in range [0-23]' }]);
    expect((await inject('GET', `/api/v1/workflows/${name}`)).json().schedule).toBe('30 9 * * *'); // unchanged
    const badName = await inject('POST', '/api/v1/workflows', { name: 'has space', tasks: [{ name: 't', type: 'script', script: 'true' }] });
    expect(badName.statusCode).toBe(400);
    expect(badName.json().detail).toContain('name');
    const slash = await inject('POST', '/api/v1/workflows', { name: 'a/b', tasks: [{ name: 't', type: 'script', script: 'true' }] });
    expect(slash.statusCode).toBe(400);
    const dup = await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 't', type: 'script', script: 'true' }] });
    expect([dup.statusCode, dup.json()]).toEqual([409, { detail: `Workflow ${name} already exists` }]);
    const bogusType = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: [{ name: 't', type: 'bogus', script: 'x' }] });
    expect([bogusType.statusCode, bogusType.json()]).toEqual([400, { detail: 'Request body is invalid: tasks.0.type must be one of: script, flow' }]);
    const noSource = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: [{ name: 't', type: 'flow', flow: 'f' }] });
    // the rule is in the schema (if/then), so the document states it
    expect([noSource.statusCode, noSource.json()]).toEqual([400, { detail: 'Request body is invalid: tasks.0.source is required' }]);
    const noScript = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: [{ name: 't', type: 'script' }] });
    expect([noScript.statusCode, noScript.json()]).toEqual([400, { detail: 'Request body is invalid: tasks.0.script is required' }]);
    const scriptWithFlow = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: [{ name: 't', type: 'script', script: 'true', flow: 'f' }] });
    expect([scriptWithFlow.statusCode, scriptWithFlow.json()]).toEqual([400, { detail: 'Request body is invalid: tasks.0.flow is not allowed here' }]);
    const unknownSource = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: [{ name: 't', type: 'flow', source: 'ghost', flow: 'f' }] });
    expect([unknownSource.statusCode, unknownSource.json()]).toEqual([400, { detail: 'Task "t" names an unknown source "ghost"' }]);
    const noTasks = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: [] });
    expect(noTasks.statusCode).toBe(400);
    const wrongType = await inject('POST', '/api/v1/workflows', { name: 'x', tasks: 'echo' });
    expect(wrongType.statusCode).toBe(400);
    for (const [m, u] of [
      ['POST', '/api/v1/workflows/nope/run'],
      ['DELETE', '/api/v1/workflows/nope'],
      ['GET', '/api/v1/workflows/nope'],
      ['PATCH', '/api/v1/schedules/nope'],
      ['POST', '/api/v1/schedules/nope/pause'],
      ['POST', '/api/v1/schedules/nope/resume'],
    ] as const) {
      const res = await inject(m, u, m === 'PATCH' ? { timezone: 'UTC' } : undefined);
      expect([res.statusCode, res.json()]).toEqual([404, { detail: 'Workflow not found' }]);
    }
    for (const u of ['/api/v1/executions/nope', '/api/v1/executions/7c0e4f5e-0000-4000-8000-000000000000/logs']) {
      expect((await inject('GET', u)).json()).toEqual({ detail: 'Execution not found' });
    }
    for (const q of ['limit=0', 'limit=101']) expect((await inject('GET', `/api/v1/executions?${q}`)).statusCode).toBe(400);
    // a workflow that runs only on demand has no schedule to pause or resume: 409 (the request itself is valid)
    const onDemand = `on-demand-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name: onDemand, tasks: [{ name: 't', type: 'script', script: 'echo hi' }] })).statusCode).toBe(201);
    for (const action of ['pause', 'resume']) {
      const res = await inject('POST', `/api/v1/schedules/${onDemand}/${action}`);
      expect([res.statusCode, res.json()]).toEqual([409, { detail: `Workflow ${onDemand} has no schedule to ${action}; give it one with PATCH /api/v1/schedules/${onDemand} {"schedule": "<cron>"}` }]);
    }
  });

  test('a manual run answers at once; the execution has tasks, outputs and logs; a failing task fails it', async () => {
    const src = (await inject('POST', '/api/v1/sources', { name: `fb-${uniq}`, source_type: 'flow-builder', url: sched.fake.url, api_key: 'flow-key' })).json();
    const name = `manual-${uniq}`;
    expect(
      (
        await inject('POST', '/api/v1/workflows', {
          name,
          tasks: [
            { name: 'greet', type: 'script', script: 'echo "hello from $(basename $(pwd))"; echo "warn" >&2' },
            { name: 'flow', type: 'flow', source: src.id, flow: 'Summarise', input: 'hi' },
          ],
        })
      ).statusCode,
    ).toBe(201);
    const t0 = Date.now();
    const run = await inject('POST', `/api/v1/workflows/${name}/run`);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(run.statusCode).toBe(200);
    expect(run.json()).toEqual({ executionId: expect.any(String), workflow: name, status: 'running', startedAt: expect.any(String) });
    const id = run.json().executionId;
    const done = await eventually(async () => {
      const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
      return e.status !== 'running' && e;
    });
    expect(done).toMatchObject({ id, workflow: name, status: 'completed', trigger: 'manual', duration: expect.stringMatching(/^\d+(ms|\.\ds)$/) });
    expect(done.tasks).toHaveLength(2);
    expect(done.tasks[0]).toMatchObject({ name: 'greet', status: 'completed', output: expect.stringMatching(/^hello from armada-script-\w+\nwarn\n$/) });
    expect(done.tasks[0].duration).toMatch(/^\d+(ms|\.\ds)$/);
    expect(done.tasks[1]).toMatchObject({ name: 'flow', status: 'completed' });
    expect(done.tasks[1].output).toContain('ran Summarise with hi');
    // the display name was resolved once, at creation: the run names the flow by its id
    expect(sched.fake.requests.find((r) => r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`)?.apiKey).toBe('flow-key');

    const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json();
    expect(logs.executionId).toBe(id);
    const messages = logs.logs.map((l: { message: string }) => l.message);
    expect(messages).toEqual(expect.arrayContaining(['Task greet started', 'warn', 'Task flow completed', 'Execution completed']));
    expect(logs.logs.find((l: { message: string }) => l.message === 'warn').level).toBe('error');
    expect(logs.logs.find((l: { message: string }) => l.message.startsWith('hello from')).level).toBe('info');

    const wf = (await inject('GET', `/api/v1/workflows/${name}`)).json();
    expect(wf.lastRun).toBe(run.json().startedAt);
    expect(wf.nextRun).toBeNull();

    const failing = `failing-${uniq}`;
    await inject('POST', '/api/v1/workflows', {
      name: failing,
      tasks: [
        { name: 'boom', type: 'script', script: 'echo before; exit 3' },
        { name: 'never', type: 'script', script: 'echo never' },
      ],
    });
    const fid = (await inject('POST', `/api/v1/workflows/${failing}/run`)).json().executionId;
    const failed = await eventually(async () => {
      const e = (await inject('GET', `/api/v1/executions/${fid}`)).json();
      return e.status !== 'running' && e;
    });
    expect(failed).toMatchObject({ status: 'failed', error: 'Task boom failed: exit code 3' });
    expect(failed.tasks.map((t: { status: string }) => t.status)).toEqual(['failed', 'skipped']);
    expect(failed.tasks[0].output).toBe('before\n');
    const failedLogs = (await inject('GET', `/api/v1/executions/${fid}/logs`)).json().logs.map((l: { level: string; message: string }) => `${l.level} ${l.message}`);
    expect(failedLogs).toEqual(['info Execution started (manual)', 'info Task boom started', 'info before', 'error Task boom failed: exit code 3']);

    // Temporal tells the truth: the failed execution's workflow is Failed, carrying the error; the completed one Completed
    const client = await sched.stack.temporal.client();
    const failedRun = client.workflow.getHandle(`execution:${fid}`);
    // the row is written inside the workflow task that then fails the workflow: wait for the close
    await expect(failedRun.result()).rejects.toMatchObject({ cause: { type: 'ScheduledRunFailed', message: 'Task boom failed: exit code 3', nonRetryable: true } });
    expect((await failedRun.describe()).status.name).toBe('FAILED');
    expect((await client.workflow.getHandle(`execution:${id}`).describe()).status.name).toBe('COMPLETED');
    const listed = await eventually(async () => {
      const ids: string[] = [];
      for await (const w of client.workflow.list({ query: `WorkflowId = "execution:${fid}" AND ExecutionStatus = "Failed"` })) ids.push(w.workflowId);
      return ids.length > 0 && ids;
    }, 10_000, 200);
    expect(listed).toEqual([`execution:${fid}`]);

    const metrics = await sched.stack.metrics.registry.metrics();
    expect(metrics).toContain(`armada_scheduler_executions_total{workflow="${name}",status="started"} 1`);
    expect(metrics).toContain(`armada_scheduler_executions_total{workflow="${name}",status="completed"} 1`);
    expect(metrics).toContain(`armada_scheduler_executions_total{workflow="${failing}",status="failed"} 1`);
    expect(metrics).toContain('armada_scheduler_execution_duration_seconds_count{status="completed"}');
  });

  test("a script printing 200,000 lines: its task's log keeps the first 10,000 and last 1,000, with a line saying how many went between", async () => {
    const name = `chatty-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'count', type: 'script', script: 'seq 1 200000' }] })).statusCode).toBe(201);
    const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId;
    const done = await eventually(async () => {
      const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
      return e.status !== 'running' && e;
    }, 60_000);
    expect(done).toMatchObject({ status: 'completed', tasks: [{ name: 'count', status: 'completed' }] });
    // more than one page (10,000 lines at most, 1,000 without limit): read them all
    const logs: { level: string; message: string }[] = [];
    for (let total = Infinity; logs.length < total; ) {
      const page = (await inject('GET', `/api/v1/executions/${id}/logs?limit=10000&offset=${logs.length}`)).json();
      logs.push(...page.logs);
      total = page.total;
    }
    const counted = logs.filter((l) => /^\d+$/.test(l.message)).map((l) => Number(l.message));
    const expected = [...Array.from({ length: 10_000 }, (_v, i) => i + 1), ...Array.from({ length: 1_000 }, (_v, i) => 199_001 + i)];
    expect(counted).toEqual(expected);
    const gap = logs.findIndex((l) => l.message.includes('left out here'));
    expect(logs[gap]).toEqual(expect.objectContaining({ level: 'warning', message: "189,000 lines left out here: a task's log keeps its first 10,000 and last 1,000 lines" }));
    expect(logs[gap - 1]?.message).toBe('10000');
    expect(logs[gap + 1]?.message).toBe('199001');
    expect(logs.map((l) => l.message)).toEqual(expect.arrayContaining(['Task count completed', 'Execution completed']));
  });

  test("a script gets its own temp dir and none of Armada's secrets", async () => {
    const name = `env-${uniq}`;
    process.env.ARMADA_ENCRYPTION_KEY_PROBE = 'leak';
    process.env.DATABASE_URL_PROBE_OK = 'visible';
    try {
      await inject('POST', '/api/v1/workflows', {
        name,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: bash parameter expansion, not a JS template
        tasks: [{ name: 'env', type: 'script', script: 'echo "${ARMADA_ENCRYPTION_KEY_PROBE:-clean} ${DATABASE_URL_PROBE_OK:-} $ARMADA_EXECUTION_ID"; pwd' }],
      });
      const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId;
      const e = await eventually(async () => {
        const body = (await inject('GET', `/api/v1/executions/${id}`)).json();
        return body.status !== 'running' && body;
      });
      const [first, dir] = e.tasks[0].output.trim().split('\n');
      expect(first).toBe(`clean  ${id}`); // neither passes: scripts get an allow-listed environment (lib/process/childEnv.ts)
      expect(path.basename(dir)).toMatch(/^armada-script-/);
      expect(fs.existsSync(dir)).toBe(false); // removed afterwards
    } finally {
      delete process.env.ARMADA_ENCRYPTION_KEY_PROBE;
      delete process.env.DATABASE_URL_PROBE_OK;
    }
  });

  test('stop kills a running `sleep 60` script within 5 s and records stopped', async () => {
    const name = `sleeper-${uniq}`;
    const pidFile = path.join(sched.tmp, 'sleeper.pid');
    await inject('POST', '/api/v1/workflows', {
      name,
      tasks: [
        { name: 'sleep', type: 'script', script: `echo $$ > ${pidFile}; sleep 60` },
        { name: 'after', type: 'script', script: 'echo after' },
      ],
    });
    const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId;
    const pid = await eventually(async () => fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8').trim()));
    expect(groupAlive(pid)).toBe(true);
    const t0 = Date.now();
    const stop = await inject('POST', `/api/v1/executions/${id}/stop`);
    expect(stop.json()).toEqual({ executionId: id, status: 'stopped' });
    await eventually(async () => !groupAlive(pid), 5000, 50);
    expect(Date.now() - t0).toBeLessThan(5000);
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
    expect(e.status).toBe('stopped');
    expect(e.tasks.map((t: { status: string }) => t.status)).toEqual(['stopped', 'skipped']);
    const run = (await sched.stack.temporal.client()).workflow.getHandle(`execution:${id}`);
    await expect(run.result()).rejects.toThrow(); // closes right after the row is written
    expect((await run.describe()).status.name).toBe('CANCELLED');
    const again = await inject('POST', `/api/v1/executions/${id}/stop`);
    expect([again.statusCode, again.json()]).toEqual([409, { detail: `Execution ${id} is not running (status stopped); only a running execution can be stopped` }]);
  });

  test('a schedule a few seconds ahead fires; pause stops further runs and resume restarts them', async () => {
    const name = `every-${uniq}`;
    const r = await inject('POST', '/api/v1/workflows', { name, schedule: '@every 2s', tasks: [{ name: 'tick', type: 'script', script: 'echo tick' }] });
    expect(r.statusCode).toBe(201);
    const first = await eventually(async () => (await executions(name)).find((e) => e.status === 'completed'), 20_000, 200);
    expect(first.trigger).toBe('schedule');
    const detail = (await inject('GET', `/api/v1/executions/${first.id}`)).json();
    expect(detail.tasks).toEqual([expect.objectContaining({ name: 'tick', status: 'completed', output: 'tick\n' })]);
    expect(detail.scheduledAt).toEqual(expect.any(String));
    expect(new Date(detail.startedAt).getTime()).toBeGreaterThanOrEqual(new Date(detail.scheduledAt).getTime());
    const logs = (await inject('GET', `/api/v1/executions/${first.id}/logs`)).json().logs;
    expect(logs.map((l: { message: string }) => l.message)).toContain('tick');
    expect((await inject('GET', `/api/v1/workflows/${name}`)).json().lastRun).not.toBeNull();

    expect((await inject('POST', `/api/v1/schedules/${name}/pause`)).json()).toMatchObject({ enabled: false, nextRun: null });
    await new Promise((r) => setTimeout(r, 1500)); // a start already in flight may still land
    const paused = (await executions(name)).length;
    await new Promise((r) => setTimeout(r, 5000));
    expect((await executions(name)).length).toBe(paused);

    expect((await inject('POST', `/api/v1/schedules/${name}/resume`)).json()).toMatchObject({ enabled: true, nextRun: expect.any(String) });
    await eventually(async () => (await executions(name)).length > paused, 15_000, 200);
    await inject('POST', `/api/v1/schedules/${name}/pause`);
    const lag = await sched.stack.metrics.registry.getSingleMetricAsString('armada_scheduler_schedule_lag_seconds');
    expect(lag).toMatch(/armada_scheduler_schedule_lag_seconds_count [1-9]/);
  });

  test('a slow script with overlap skip never runs twice at once', async () => {
    const name = `slow-${uniq}`;
    const file = path.join(sched.tmp, 'slow.log');
    const r = await inject('POST', '/api/v1/workflows', {
      name,
      schedule: '@every 1s',
      tasks: [{ name: 'slow', type: 'script', script: `echo "start $(date +%s%N)" >> ${file}; sleep 3; echo "end $(date +%s%N)" >> ${file}` }],
    });
    expect(r.statusCode).toBe(201);
    await eventually(async () => (await executions(name)).filter((e) => e.status === 'completed').length >= 2, 30_000, 250);
    await inject('POST', `/api/v1/schedules/${name}/pause`);
    await eventually(async () => (await executions(name)).every((e) => e.status !== 'running'), 15_000, 250);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    // strictly alternating start/end: never two starts without an end between them
    expect(lines.map((l) => l.split(' ')[0])).toEqual(lines.map((_l, i) => (i % 2 === 0 ? 'start' : 'end')));
    const runs = await executions(name);
    const sorted = runs.map((e) => [Date.parse(e.startedAt), Date.parse(e.completedAt ?? '')] as const).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]?.[0]).toBeGreaterThanOrEqual(sorted[i - 1]?.[1] as number);
    // in ~8 s of `@every 1s` a non-skipping scheduler would have started about 8 runs
    expect(runs.length).toBeLessThan(5);
  });

  test('a jittered schedule: lag is measured from the jittered time Temporal chose, not the nominal cron time', async () => {
    const name = `jitter-${uniq}`;
    const lagMetric = async () => {
      const values = ((await sched.stack.metrics.registry.getSingleMetric('armada_scheduler_schedule_lag_seconds')?.get())?.values ?? []) as { metricName?: string; value: number }[];
      const pick = (n: string) => values.find((v) => v.metricName === n)?.value ?? 0;
      return { sum: pick('armada_scheduler_schedule_lag_seconds_sum'), count: pick('armada_scheduler_schedule_lag_seconds_count') };
    };
    const before = await lagMetric();
    expect((await inject('POST', '/api/v1/workflows', { name, schedule: '@every 3s', jitter: 2, tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
    await eventually(async () => (await executions(name)).filter((e) => e.status === 'completed').length >= 3, 30_000, 250);
    await inject('POST', `/api/v1/schedules/${name}/pause`);
    await eventually(async () => (await executions(name)).every((e) => e.status !== 'running'), 15_000, 250);
    const { rows } = await sched.stack.db.query<{ temporal_workflow_id: string; scheduled_at: Date; started_at: Date }>(
      `SELECT temporal_workflow_id, scheduled_at, started_at FROM scheduler_executions WHERE workflow = $1`,
      [name],
    );
    await eventually(async () => (await lagMetric()).count - before.count === rows.length, 10_000, 100); // observed beside the run
    const actions = (await (await sched.stack.temporal.client()).schedule.getHandle(`schedule:${name}`).describe()).info.recentActions;
    let jitterSum = 0;
    let expectedSum = 0;
    for (const r of rows) {
      const action = actions.find((a) => a.action.workflow.workflowId === r.temporal_workflow_id);
      if (!action) throw new Error(`the schedule does not list ${r.temporal_workflow_id}`);
      const jittered = action.scheduledAt.getTime();
      // the row keeps the nominal time (in the workflow id too); Temporal's action time adds the jitter offset
      expect(r.temporal_workflow_id).toBe(`schedule:${name}-${r.scheduled_at.toISOString().replace('.000Z', 'Z')}`);
      expect(jittered).toBeGreaterThanOrEqual(r.scheduled_at.getTime());
      expect(jittered - r.scheduled_at.getTime()).toBeLessThan(2000);
      jitterSum += jittered - r.scheduled_at.getTime();
      expectedSum += Math.max(0, r.started_at.getTime() - jittered) / 1000;
    }
    expect(jitterSum).toBeGreaterThan(0); // with 2 s of jitter over 3+ runs, some offset is certain
    const after = await lagMetric();
    expect(after.sum - before.sum).toBeCloseTo(expectedSum, 2); // what was observed is start − jittered time, run by run
  });

  // the start runs inside the first workflow task (beginRunLocal) for LOCAL_START_MS, then beginRun takes over
  test.each([
    ['inside the first workflow task', 0],
    ['after beginRun took over', LOCAL_START_MS + 1000],
  ])('a stop while the first task, a flow, waits on the platform (%s) records stopped with the states the start wrote', async (_when, stopAfterMs) => {
    const held = await startFakeFlowBuilder(); // a platform of its own (a source's URL is unique), holding every run 10 s
    held.runDelayMs = 10_000;
    const tag = `${uniq}-${stopAfterMs}`;
    const src = (await inject('POST', '/api/v1/sources', { name: `held-src-${tag}`, source_type: 'flow-builder', url: held.url, api_key: 'flow-key' })).json();
    const name = `held-${tag}`;
    await inject('POST', '/api/v1/workflows', {
      name,
      tasks: [
        { name: 'slow', type: 'flow', source: src.id, flow: 'Summarise', input: 'wait' },
        { name: 'after', type: 'script', script: 'echo after' },
      ],
    });
    const posts = () => held.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`).length;
    const before = posts();
    try {
      const runAt = Date.now();
      const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId;
      await eventually(async () => posts() > before, 10_000, 20); // the request is at the platform, beginRun waits for it
      // the request leaves while the start is written: the row shows the first task running a moment later at most
      const running = await eventually(async () => {
        const body = (await inject('GET', `/api/v1/executions/${id}`)).json();
        return body.tasks[0].status === 'running' && body;
      }, 5000, 10);
      expect([running.status, running.tasks.map((t: { status: string }) => t.status)]).toEqual(['running', ['running', 'pending']]);
      await new Promise((r) => setTimeout(r, stopAfterMs));
      const stopAt = Date.now();
      expect((await inject('POST', `/api/v1/executions/${id}/stop`)).json()).toEqual({ executionId: id, status: 'stopped' });
      const e = await eventually(async () => {
        const body = (await inject('GET', `/api/v1/executions/${id}`)).json();
        return body.status !== 'running' && body;
      }, 10_000);
      expect(e).toMatchObject({ status: 'stopped', error: 'Stopped by request' });
      expect(e.tasks.map((t: { status: string }) => t.status)).toEqual(['stopped', 'skipped']);
      const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs.map((l: { level: string; message: string }) => `${l.level} ${l.message}`);
      expect(logs).toEqual(['info Execution started (manual)', 'info Task slow started', `info POST flow ${FAKE_FLOWS.summarise.id} on source held-src-${tag}`, 'warning Execution stopped']);
      expect(posts() - before).toBe(1); // sent once, not again on the stop
      const handle = (await sched.stack.temporal.client()).workflow.getHandle(`execution:${id}`);
      await expect(handle.result()).rejects.toThrow();
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      const dispatched = ((await handle.fetchHistory()).events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
      // the hand-over comes LOCAL_START_MS into the first workflow task: a stop sent well before that (counted from the
      // run request, which comes before the task) finds the start inside it; a machine too loaded to send it in time
      // (polls of 10-20 ms above) tests the other path, which the second case asserts
      if (stopAfterMs > 0) expect(dispatched.includes('beginRun')).toBe(true);
      else if (stopAt - runAt < LOCAL_START_MS - 500) expect(dispatched.includes('beginRun')).toBe(false);
      await recordHistory(sched.stack, `execution:${id}`, stopAfterMs ? 'workflow-run-stopped-in-handed-over-flow' : 'workflow-run-stopped-in-first-flow');
    } finally {
      await held.close();
    }
  });

  test('a run of a workflow deleted before it started ends "deleted" and writes nothing', async () => {
    const client = await sched.stack.temporal.client();
    const workflowId = `execution:ghost-${uniq}`;
    const result = await client.workflow.execute('workflowRunWorkflow', {
      workflowId,
      taskQueue: sched.stack.config.temporal.taskQueue,
      args: [{ workflow: `ghost-${uniq}`, trigger: 'manual' }],
    });
    expect(result).toBe('deleted');
    expect((await sched.stack.db.query('SELECT count(*)::int AS n FROM scheduler_executions WHERE workflow = $1', [`ghost-${uniq}`])).rows[0].n).toBe(0);
    ensureTemporalRuntime();
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.ARMADA_WORKFLOW_BUNDLE as string }, sinks: REPLAY_SINKS }, await client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
  });

  test('replaying the histories of this file (completed, failed, stopped, scheduled) is deterministic', async () => {
    const client = await sched.stack.temporal.client();
    // (the run stopped after beginRun took over is left out: its start did not answer within the first workflow task)
    const { rows } = await sched.stack.db.query(
      `SELECT DISTINCT ON (status, trigger) temporal_workflow_id, status, trigger FROM scheduler_executions WHERE status <> 'running' AND workflow <> $1`,
      [`held-${uniq}-${LOCAL_START_MS + 1000}`],
    );
    expect(rows.map((r) => r.status).sort()).toEqual(expect.arrayContaining(['completed', 'failed', 'stopped']));
    for (const r of rows) {
      const history = await client.workflow.getHandle(r.temporal_workflow_id).fetchHistory();
      // started with run paths (lib/scheduler/runPaths.ts): the first workflow task ran the start as a local activity
      // (local-start: its marker comes first, no patch marker and no TemporalChangeVersion upsert before it), and
      // every start here answered within it, so no beginRun was dispatched
      const { EventType } = temporal.api.enums.v1;
      const events = history.events ?? [];
      const types = events.map((e) => e.eventType);
      const firstCommand = events[types.indexOf(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) + 1];
      expect(firstCommand?.eventType).toBe(EventType.EVENT_TYPE_MARKER_RECORDED);
      expect(firstCommand?.markerRecordedEventAttributes?.markerName).toBe('core_local_activity');
      expect(types).not.toContain(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES);
      expect(events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean)).not.toContain('beginRun');
      ensureTemporalRuntime();
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.ARMADA_WORKFLOW_BUNDLE as string }, sinks: REPLAY_SINKS }, history, r.temporal_workflow_id);
      await recordHistory(sched.stack, r.temporal_workflow_id, `workflow-run-${r.status}-${r.trigger}`);
    }
  });

  // after the replay test above, which expects every run of this file before it to have started in its first task
  test('a first flow answering after the first workflow task stopped waiting: beginRun takes it over and reports its answer; sent once', async () => {
    const slow = await startFakeFlowBuilder();
    slow.runDelayMs = LOCAL_START_MS + 2000;
    const src = (await inject('POST', '/api/v1/sources', { name: `slow-src-${uniq}`, source_type: 'flow-builder', url: slow.url, api_key: 'flow-key' })).json();
    const name = `slow-first-${uniq}`;
    await inject('POST', '/api/v1/workflows', {
      name,
      tasks: [
        { name: 'slow', type: 'flow', source: src.id, flow: 'Summarise', input: 'late' },
        { name: 'after', type: 'script', script: 'echo after' },
      ],
    });
    const posts = () => slow.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`).length;
    try {
      const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId;
      const e = await eventually(async () => {
        const body = (await inject('GET', `/api/v1/executions/${id}`)).json();
        return body.status !== 'running' && body;
      }, 30_000);
      expect(e).toMatchObject({ status: 'completed', error: null });
      expect(e.tasks.map((t: { status: string }) => t.status)).toEqual(['completed', 'completed']);
      expect(e.tasks[0].output).toContain('ran Summarise with late');
      expect(posts()).toBe(1);
      const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs.map((l: { message: string }) => l.message);
      expect(logs.filter((m: string) => m.startsWith('POST flow'))).toHaveLength(1);
      expect(logs).toEqual(expect.arrayContaining(['Execution started (manual)', 'Task slow started', 'Task slow completed', 'Task after started', 'Execution completed']));
      const client = await sched.stack.temporal.client();
      const history = await client.workflow.getHandle(`execution:${id}`).fetchHistory();
      // the local try handed over once its wait ran out, and beginRun ran once: it reported the request in flight
      const scheduled = (history.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
      expect(scheduled).toEqual(['beginRun', 'runScript']);
      const outcome = await sched.stack.db.query('SELECT state, attempt FROM scheduler_task_outcomes WHERE execution_id = $1 AND task_index = 0', [id]);
      expect(outcome.rows).toEqual([{ state: 'done', attempt: expect.any(Number) }]);
      expect(outcome.rows[0].attempt).toBeLessThan(0); // the local try's claim: it sent the request and recorded the answer
      ensureTemporalRuntime();
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.ARMADA_WORKFLOW_BUNDLE as string }, sinks: REPLAY_SINKS }, history, `execution:${id}`);
      await recordHistory(sched.stack, `execution:${id}`, 'workflow-run-handed-over-first-flow');
    } finally {
      await slow.close();
    }
  });
});
