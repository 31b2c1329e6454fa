/**
 * Two changes of one schedule while Temporal is slow (here a TCP proxy that holds every byte between the API and
 * Temporal until the test lets them through, within the first change's 10 s deadline): the first holds only its
 * schedule's change lock while it waits for Temporal, not the schedule's row; the second change, and a pause, wait for
 * it at most 5 s (SCHEDULE_CHANGE_WAIT_MS) and answer 409 "another change … is in progress", having changed nothing;
 * once Temporal answers, the first is a 200 and the row and Temporal show its change, and a change sent again goes
 * through (docs/scheduler.md#concurrent-changes).
 *
 * Before: the first held the row (`SELECT … FOR UPDATE`) across its Temporal call, so a test's `FOR UPDATE NOWAIT`
 * failed, and the second change answered the API's lock_timeout 503 after 5 s ("…could not get a lock held by another
 * transaction…"), worded as a stuck database transaction while the first was merely slow. The app's pool carries the
 * API's default limits (lock_timeout 5 s), as `armada api`'s does.
 */
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { buildSchedulerApp } from '../../api/scheduler/app';
import { createPool, sessionLimits } from '../../lib/db/pool';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { TEST_API_KEY, env, eventually, logger } from '../support/harness';
import { schedulerStackForFile } from '../support/schedulerStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(240_000);

const sched = schedulerStackForFile({});
let proxy: TcpProxy;
let proxied: TemporalHandle;
let apiPool: Pool;
let app: FastifyInstance;
const uniq = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  const { stack } = sched;
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxied = createTemporalHandle(proxy.address, stack.config.temporal.namespace);
  apiPool = createPool(stack.dbUrl, logger, { max: 10, ...sessionLimits(stack.config.apiDatabaseLimits) });
  app = await buildSchedulerApp({ db: apiPool, config: stack.config, keys: stack.keys, temporal: proxied, logger, metrics: stack.metrics, secondListener: true });
  await app.ready();
  // connected before Temporal turns slow: the calls below reach a Temporal that holds them
  await (await proxied.client()).workflowService.getSystemInfo({});
});
afterAll(async () => {
  proxy?.setMode('forward');
  await app?.close();
  await proxied?.close();
  await proxy?.close();
  await apiPool?.end();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A request to the API behind the proxy; one that has no answer in 45 s is a failure of its own. */
async function call(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<Answer> {
  let timer: NodeJS.Timeout | undefined;
  const res = await Promise.race([
    app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${method} ${url}: no answer in 45 s`)), 45_000);
    }),
  ]).finally(() => clearTimeout(timer));
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

/** What Temporal holds of the cron schedule (read directly, not through the proxy): its jitter in s and the hour it fires. */
async function temporalTiming(temporalId: string): Promise<{ jitter: number; hour: number | undefined }> {
  const d = await (await sched.stack.temporal.client()).schedule.getHandle(temporalId).describe();
  return { jitter: Math.round((d.spec.jitter ?? 0) / 1000), hour: d.spec.calendars?.[0]?.hour?.[0]?.start };
}

/** Whether the schedule's row can be locked now (another transaction holding it: false). */
async function rowFree(workflow: string): Promise<boolean> {
  const c = await sched.stack.db.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT 1 FROM scheduler_schedules WHERE workflow = $1 FOR UPDATE NOWAIT', [workflow]);
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === '55P03') return false;
    throw err;
  } finally {
    await c.query('ROLLBACK').catch(() => undefined);
    c.release();
  }
}

test('a change waiting for a slow Temporal holds no row lock; a second change and a pause answer 409 and change nothing; the first is applied', async () => {
  const name = `slow-${uniq}`;
  // paused, so nothing fires while the test changes it
  const created = await call('POST', '/api/v1/workflows', { name, schedule: '0 1 * * *', enabled: false, tasks: [{ name: 't', type: 'script', script: 'true' }] });
  expect(created.status).toBe(201);

  proxy.setMode('hold');
  let first: Promise<Answer>;
  let second: Answer;
  let pause: Answer;
  let freeMeanwhile: boolean;
  try {
    first = call('PATCH', `/api/v1/schedules/${name}`, { schedule: '0 5 * * *' });
    // the first change holds its schedule's change lock (lockTemporalSchedule's advisory lock) and waits for Temporal
    await eventually(async () => {
      const { rows } = await sched.stack.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
          WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()
            AND l.objid::bigint = (hashtext($1)::bigint & 4294967295)`,
        [`armada-scheduler-schedule:schedule:${name}`],
      );
      return (rows[0]?.n ?? 0) >= 1;
    }, 20_000, 50);
    freeMeanwhile = await rowFree(name);
    [second, pause] = await Promise.all([call('PATCH', `/api/v1/schedules/${name}`, { jitter: 7 }), call('POST', `/api/v1/schedules/${name}/pause`)]);
  } finally {
    proxy.setMode('forward');
  }
  expect(freeMeanwhile).toBe(true);
  expect([second.status, second.body]).toEqual([409, { detail: `Another change of the schedule of workflow ${name} is in progress (waiting for Temporal); send this one again once it has finished` }]);
  expect([pause.status, pause.body.detail]).toEqual([409, second.body.detail]);

  const a = await first;
  expect([a.status, a.body.schedule, a.body.jitter]).toEqual([200, '0 5 * * *', 0]);
  const row = (await call('GET', `/api/v1/workflows/${name}`)).body;
  expect([row.schedule, row.jitter]).toEqual(['0 5 * * *', 0]);
  expect(await temporalTiming(`schedule:${name}`)).toEqual({ jitter: 0, hour: 5 });

  // Temporal answers again: the refused change, sent again, goes through
  const again = await call('PATCH', `/api/v1/schedules/${name}`, { jitter: 7 });
  expect([again.status, again.body.schedule, again.body.jitter]).toEqual([200, '0 5 * * *', 7]);
  expect(await temporalTiming(`schedule:${name}`)).toEqual({ jitter: 7, hour: 5 });
});
