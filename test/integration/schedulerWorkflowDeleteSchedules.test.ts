/**
 * A workflow deleted while one of its schedules gets its Temporal Schedule (the first cron of its default schedule
 * through PATCH, committed while the deletion waits for the row): the deletion removes that Temporal Schedule too.
 * Before, it listed the Temporal Schedules before the change committed, so the one created meanwhile stayed in
 * Temporal with no row, firing runs of a workflow that no longer existed, and a workflow created again under the
 * name could not get its schedule (`schedule:<name>` already existed).
 */
import type { PoolClient } from 'pg';
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;

beforeAll(async () => {
  stack = await startSchedulerStack({ worker: false });
  inject = schedulerInject(stack);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const temporalHas = async (temporalId: string): Promise<boolean> =>
  (await stack.temporal.client()).schedule
    .getHandle(temporalId)
    .describe()
    .then(() => true, () => false);

/**
 * Resolves once `n` backends of this file's database wait for a lock (the requests sent are queued behind the test's
 * lock). Counted in this database only: pg_locks counted the waits of every file running at once on the run's
 * PostgreSQL, so under load the DELETE could go before the PATCH had queued (and be granted first: the PATCH's 404).
 */
async function lockWaiters(n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await stack.db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    if ((rows[0]?.n ?? 0) >= n) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`fewer than ${n} lock waiters`);
}

test('a workflow deleted while a PATCH gives it its first cron: no Temporal Schedule is left, and the name can be used again with a schedule', async () => {
  const name = `wfdel-${Math.random().toString(36).slice(2, 8)}`;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
  // the test holds the default schedule's row, so the PATCH and then the deletion queue behind it, in that order
  const holder: PoolClient = await stack.db.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM scheduler_schedules WHERE workflow = $1 FOR UPDATE', [name]);
    const patched = inject('PATCH', `/api/v1/schedules/${name}`, { schedule: '0 3 1 1 *' });
    await lockWaiters(1);
    const deleted = inject('DELETE', `/api/v1/workflows/${name}`);
    await lockWaiters(2);
    await holder.query('COMMIT');
    const [p, d] = await Promise.all([patched, deleted]);
    expect([p.statusCode, d.statusCode, d.json()]).toEqual([200, 200, { name, deleted: true }]);
  } finally {
    holder.release();
  }
  expect((await inject('GET', `/api/v1/workflows/${name}`)).statusCode).toBe(404);
  expect(await temporalHas(`schedule:${name}`)).toBe(false);
  const again = await inject('POST', '/api/v1/workflows', { name, schedule: '0 4 1 1 *', tasks: [{ name: 's', type: 'script', script: 'true' }] });
  expect([again.statusCode, again.json().detail]).toEqual([201, undefined]);
  expect((await (await stack.temporal.client()).schedule.getHandle(`schedule:${name}`).describe()).spec.calendars?.[0]?.hour?.[0]?.start).toBe(4);
});

test('a schedule added while its workflow is deleted: the 404 Workflow not found (was a 500), and nothing is left in Temporal', async () => {
  const name = `wfdel-add-${Math.random().toString(36).slice(2, 8)}`;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
  // the test's transaction deletes the workflow; the request reads it before that commits and inserts its schedule after
  const deleter: PoolClient = await stack.db.connect();
  let added: Awaited<ReturnType<typeof inject>>;
  try {
    await deleter.query('BEGIN');
    await deleter.query('DELETE FROM scheduler_workflows WHERE name = $1', [name]);
    const adding = inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'cron', schedule: '0 3 1 1 *' });
    await lockWaiters(1);
    await deleter.query('COMMIT');
    added = await adding;
  } finally {
    deleter.release();
  }
  expect([added.statusCode, added.json()]).toEqual([404, { detail: 'Workflow not found' }]);
  const left = await (await stack.temporal.client()).schedule.list({ query: `ArmadaWorkflow = '${name}'` });
  const ids: string[] = [];
  for await (const s of left) ids.push(s.scheduleId);
  expect(ids).toEqual([]);
});

test('a stop of an execution whose workflow is deleted meanwhile: the 404 Execution not found once its row is gone (was `200 running` at the end of the stop\'s 8 s wait)', async () => {
  const name = `wfdelstop-${Math.random().toString(36).slice(2, 8)}`;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 's', type: 'script', script: 'sleep 30' }] })).statusCode).toBe(201);
  const run = await inject('POST', `/api/v1/workflows/${name}/run`);
  expect(run.statusCode).toBe(200);
  const id = run.json().executionId as string;
  // no worker here: the run never records its stop, so the stop waits on its row, which the deletion removes
  const stopping = inject('POST', `/api/v1/executions/${id}/stop`);
  await new Promise((r) => setTimeout(r, 300));
  const deleted = inject('DELETE', `/api/v1/workflows/${name}`);
  const stop = await stopping;
  expect([stop.statusCode, stop.json()]).toEqual([404, { detail: 'Execution not found' }]);
  expect((await deleted).statusCode).toBe(200);
  expect((await inject('GET', `/api/v1/executions/${id}`)).statusCode).toBe(404);
  const handle = (await stack.temporal.client()).workflow.getHandle(`execution:${id}`);
  await handle.terminate('test over').catch(() => undefined);
});
