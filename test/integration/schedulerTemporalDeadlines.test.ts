/**
 * The scheduler API in front of a Temporal that takes the connection but does not answer (a frozen or stalled server;
 * here a TCP proxy that holds every byte): every route that calls Temporal answers `503 <operation>: Temporal is
 * unavailable` with Retry-After within its deadline, and what the client was told stays true once Temporal answers
 * (docs/scheduler.md#temporal-deadlines): a run answered 503 never runs, even when Temporal starts it later; a run
 * that began meanwhile is a 200; a schedule change answered 503 is undone in Temporal if it landed there after all.
 * The worker and the test's own client talk to Temporal directly.
 *
 * Before: a run sent 0.5 s into the stall answered 200 after 65 s, when Temporal was resumed; every such route waited
 * as long as Temporal stayed silent.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ScheduleNotFoundError } from '@temporalio/client';
import { buildSchedulerApp } from '../../api/scheduler/app';
import { RUN_PATHS } from '../../lib/scheduler/runPaths';
import { WORKFLOW_RUN_TYPE, type WorkflowRunInput } from '../../lib/scheduler/temporalSchedules';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { TEST_API_KEY, env, eventually, logger } from '../support/harness';
import { schedulerStackForFile } from '../support/schedulerStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(240_000);

const sched = schedulerStackForFile();
let proxy: TcpProxy;
let proxied: TemporalHandle;
let app: FastifyInstance;
const uniq = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxied = createTemporalHandle(proxy.address, sched.stack.config.temporal.namespace);
  const { stack } = sched;
  app = await buildSchedulerApp({ db: stack.db, config: stack.config, keys: stack.keys, temporal: proxied, logger, metrics: stack.metrics, secondListener: true });
  await app.ready();
  // connected before the stall: the calls below reach a Temporal that holds them, not a connect that fails at once
  expect((await call('GET', '/api/v1/schedules')).status).toBe(200);
  await (await proxied.client()).workflowService.getSystemInfo({});
});
afterAll(async () => {
  proxy?.setMode('forward');
  await app?.close();
  await proxied?.close();
  await proxy?.close();
});

interface Answer {
  status: number;
  detail: string | undefined;
  retryAfter: string | undefined;
  ms: number;
  body: Record<string, unknown>;
}

/** A request to the API behind the proxy; one that has no answer in 45 s is a failure of its own. */
async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<Answer> {
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const answer = app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });
  const res = await Promise.race([
    answer,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${method} ${url}: no answer in 45 s`)), 45_000);
    }),
  ]).finally(() => clearTimeout(timer));
  const body = res.json() as Record<string, unknown>;
  return { status: res.statusCode, detail: body.detail as string | undefined, retryAfter: res.headers['retry-after'] as string | undefined, ms: Date.now() - t0, body };
}

/** Holds every byte between the proxied API and Temporal while `fn` runs. */
async function whileTemporalSilent<T>(fn: () => Promise<T>): Promise<T> {
  proxy.setMode('hold');
  try {
    return await fn();
  } finally {
    proxy.setMode('forward');
  }
}

const unavailable = (what: string) => ({ status: 503, detail: `${what}: Temporal is unavailable`, retryAfter: '1' });
const shape = (a: Answer) => ({ status: a.status, detail: a.detail, retryAfter: a.retryAfter });

test('every scheduler route that calls Temporal answers 503 "<operation>: Temporal is unavailable" with Retry-After within its deadline; reads show what they know without it', async () => {
  const { inject } = sched;
  const script = (name: string, s: string) => ({ name, type: 'script', script: s });
  expect((await inject('POST', '/api/v1/workflows', { name: `quick-${uniq}`, tasks: [script('t', 'true')] })).statusCode).toBe(201);
  expect((await inject('POST', '/api/v1/workflows', { name: `sleeper-${uniq}`, tasks: [script('t', 'sleep 60')] })).statusCode).toBe(201);
  expect((await inject('POST', '/api/v1/workflows', { name: `sched-${uniq}`, schedule: '0 0 1 1 *', tasks: [script('t', 'true')] })).statusCode).toBe(201);
  const extra = (await inject('POST', `/api/v1/workflows/sched-${uniq}/schedules`, { type: 'cron', schedule: '0 0 2 1 *' })).json();
  const finished = (await inject('POST', `/api/v1/workflows/quick-${uniq}/run`)).json().executionId as string;
  const running = (await inject('POST', `/api/v1/workflows/sleeper-${uniq}/run`)).json().executionId as string;
  await eventually(async () => (await inject('GET', `/api/v1/executions/${finished}`)).json().status === 'completed', 30_000);

  const answers = await whileTemporalSilent(() =>
    Promise.all([
      call('POST', `/api/v1/workflows/quick-${uniq}/run`),
      call('POST', `/api/v1/executions/${finished}/retry`),
      call('POST', `/api/v1/executions/${running}/stop`),
      call('POST', '/api/v1/workflows', { name: `new-${uniq}`, schedule: '0 0 1 1 *', tasks: [script('t', 'true')] }),
      call('POST', `/api/v1/workflows/sched-${uniq}/schedules`, { type: 'cron', schedule: '0 0 3 1 *' }),
      call('PATCH', `/api/v1/workflows/sched-${uniq}/schedules/${extra.id}`, { schedule: '0 0 4 1 *' }),
      call('PATCH', `/api/v1/schedules/sched-${uniq}`, { schedule: '0 0 5 1 *' }),
      call('POST', `/api/v1/schedules/sched-${uniq}/pause`),
      call('DELETE', `/api/v1/workflows/sched-${uniq}/schedules/${extra.id}`),
      call('DELETE', `/api/v1/workflows/sched-${uniq}`),
      call('GET', `/api/v1/workflows/sched-${uniq}/schedules`),
    ]),
  );
  const [run, retry, stop, createWorkflow, createSchedule, patchSchedule, patchDefault, pause, deleteSchedule, deleteWorkflow, list] = answers;
  expect(shape(run)).toEqual(unavailable('Could not start the execution'));
  expect(shape(retry)).toEqual(unavailable('Could not start the execution'));
  expect(shape(stop)).toEqual(unavailable('Error stopping execution'));
  expect(shape(createWorkflow)).toEqual(unavailable('Error creating schedule'));
  expect(shape(createSchedule)).toEqual(unavailable('Error creating schedule'));
  // two changes of one schedule (the extra one's PATCH and DELETE, the default one's PATCH and pause): the one that
  // takes the schedule's change lock waits for Temporal, its 503; the other waits for it at most 5 s, then the 409 of
  // docs/scheduler.md#concurrent-changes (before: it queued on the row for the first's 10 s, then had its own 10 s)
  const changes: Array<[[Answer, string], [Answer, string]]> = [
    [
      [patchSchedule, 'Error updating schedule'],
      [deleteSchedule, 'Error deleting schedule'],
    ],
    [
      [patchDefault, 'Error updating schedule'],
      [pause, 'Error on pause'],
    ],
  ];
  for (const [a, b] of changes) {
    const [[first, what], [second]] = a[0].status === 409 ? [b, a] : [a, b];
    expect(shape(first)).toEqual(unavailable(what));
    expect([second.status, second.detail]).toEqual([409, expect.stringMatching(/^Another change of .+ is in progress \(waiting for Temporal\); send this one again once it has finished$/)]);
  }
  expect(shape(deleteWorkflow)).toEqual(unavailable('Error deleting schedule'));
  // a view asks Temporal only for the next run: it answers without it
  expect(list.status).toBe(200);
  expect((list.body.schedules as { nextRun: unknown }[]).map((s) => s.nextRun)).toEqual([null, null]);
  for (const a of answers) expect(a.ms).toBeLessThan(30_000); // the deadline is 10 s (a read's 5 s)

  // nothing was changed: the rows are as they were
  const schedules = (await inject('GET', `/api/v1/workflows/sched-${uniq}/schedules`)).json().schedules;
  expect(schedules.map((s: { schedule: string; enabled: boolean }) => [s.schedule, s.enabled])).toEqual([
    ['0 0 1 1 *', true],
    ['0 0 2 1 *', true],
  ]);
  expect((await inject('GET', `/api/v1/workflows/new-${uniq}`)).statusCode).toBe(404);
  expect((await inject('GET', `/api/v1/executions/${running}`)).json().status).toBe('running');
  expect((await inject('POST', `/api/v1/executions/${running}/stop`)).json()).toEqual({ executionId: running, status: 'stopped' });
});

/** The arguments the API starts a manual run with (startExecution.ts), for the execution row `id`. */
async function runArgs(id: string): Promise<WorkflowRunInput> {
  const { rows } = await sched.stack.db.query<{ workflow: string; workflow_id: string; started_at: Date }>('SELECT workflow, workflow_id, started_at FROM scheduler_executions WHERE id = $1', [id]);
  const row = rows[0];
  if (!row) throw new Error(`no execution ${id}`);
  return { workflow: row.workflow, workflowId: row.workflow_id, trigger: 'manual', executionId: id, startedAt: row.started_at.toISOString(), paths: RUN_PATHS };
}

/** Starts `execution:<id>` as Temporal would have on the API's request (or joins it, when that request got there). */
async function startAsTemporalWould(id: string) {
  const client = await sched.stack.temporal.client();
  return client.workflow.start(WORKFLOW_RUN_TYPE, {
    workflowId: `execution:${id}`,
    taskQueue: sched.stack.config.temporal.taskQueue,
    args: [await runArgs(id)],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

test('a run answered 503 never runs, even when Temporal starts it after the answer; a run that began before the deadline is the 200', async () => {
  const { inject } = sched;
  const ran = path.join(sched.tmp, 'ran');
  const name = `once-${uniq}`;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 't', type: 'script', script: `echo "$ARMADA_EXECUTION_ID" >> ${ran}` }] })).statusCode).toBe(201);
  const lines = () => (fs.existsSync(ran) ? fs.readFileSync(ran, 'utf8').trim().split('\n').filter(Boolean) : []);

  // 1. not begun when the API gave up: 503, and the run Temporal starts afterwards does nothing
  const refused = await whileTemporalSilent(() => call('POST', `/api/v1/workflows/${name}/run`));
  expect(shape(refused)).toEqual(unavailable('Could not start the execution'));
  const [gaveUp] = (await inject('GET', `/api/v1/executions?workflow=${name}`)).json().executions;
  expect(gaveUp).toMatchObject({ status: 'failed', error: 'Could not start the execution' });
  const late = await startAsTemporalWould(gaveUp.id);
  expect(await late.result()).toBe('deleted'); // ended at once: its row says it never started
  expect(lines()).toEqual([]);
  expect((await inject('GET', `/api/v1/executions/${gaveUp.id}`)).json()).toMatchObject({ status: 'failed', error: 'Could not start the execution' });
  expect((await inject('GET', `/api/v1/executions/${gaveUp.id}/logs`)).json().logs).toEqual([]);

  // 2. begun before the API gave up (Temporal got the start, the answer did not come back): 200, and it runs once
  const answered = await whileTemporalSilent(async () => {
    const pending = call('POST', `/api/v1/workflows/${name}/run`);
    const id = await eventually(async () => {
      const { rows } = await sched.stack.db.query<{ id: string }>("SELECT id FROM scheduler_executions WHERE workflow = $1 AND status = 'running'", [name]);
      return rows[0]?.id;
    }, 10_000, 20);
    await startAsTemporalWould(id);
    await eventually(async () => (await inject('GET', `/api/v1/executions/${id}`)).json().tasks[0].status !== 'pending', 20_000, 50);
    return { id, answer: await pending };
  });
  expect(answered.answer.status).toBe(200);
  expect(answered.answer.body).toMatchObject({ executionId: answered.id, workflow: name, status: 'running' });
  await eventually(async () => (await inject('GET', `/api/v1/executions/${answered.id}`)).json().status === 'completed', 30_000);
  expect(lines()).toEqual([answered.id]);
});

test('a schedule change Temporal did not answer in time, applied by Temporal afterwards, is undone: Temporal comes back to the rows', async () => {
  const { inject } = sched;
  const name = `resync-${uniq}`;
  expect((await inject('POST', '/api/v1/workflows', { name, schedule: '0 0 1 1 *', tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
  const client = await sched.stack.temporal.client();
  const fresh = `fresh-${uniq}`;
  await whileTemporalSilent(async () => {
    expect(shape(await call('POST', `/api/v1/schedules/${name}/pause`))).toEqual(unavailable('Error on pause'));
    expect(shape(await call('POST', '/api/v1/workflows', { name: fresh, schedule: '0 0 1 1 *', tasks: [{ name: 't', type: 'script', script: 'true' }] }))).toEqual(
      unavailable('Error creating schedule'),
    );
    // what the held requests would have done had Temporal taken them after the answer
    await client.schedule.getHandle(`schedule:${name}`).pause('applied late');
    await client.schedule.create({
      scheduleId: `schedule:${fresh}`,
      spec: { cronExpressions: ['0 0 1 1 *'] },
      action: { type: 'startWorkflow', workflowType: WORKFLOW_RUN_TYPE, taskQueue: sched.stack.config.temporal.taskQueue, workflowId: `schedule:${fresh}`, args: [{ workflow: fresh, trigger: 'schedule' }] },
    });
  });
  // the rows say: the schedule is not paused, the workflow was never created
  expect((await inject('GET', `/api/v1/workflows/${name}`)).json().enabled).toBe(true);
  expect((await inject('GET', `/api/v1/workflows/${fresh}`)).statusCode).toBe(404);
  await eventually(async () => (await client.schedule.getHandle(`schedule:${name}`).describe()).state.paused === false, 60_000, 250);
  await eventually(
    async () =>
      client.schedule
        .getHandle(`schedule:${fresh}`)
        .describe()
        .then(
          () => false,
          (err: unknown) => err instanceof ScheduleNotFoundError,
        ),
    60_000,
    250,
  );
});
