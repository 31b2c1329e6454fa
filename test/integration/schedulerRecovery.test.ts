import { buildSchedulerApp } from '../../api/scheduler/app';
import { Writable } from 'node:stream';
import { createLogger } from '../../lib/logger';
import { maintenanceScheduleId } from '../../lib/scheduler/maintenanceSchedule';
import { createTemporalHandle } from '../../lib/temporal/client';
import { startTcpProxy } from '../support/tcpProxy';
import { recordCompletedHistory } from '../support/attemptHelpers';
import { startFakeFlowBuilder } from '../support/fakeFlowBuilder';
import { startWorkers, type RunningWorkers } from '../../workers/createWorker';
import { env, eventually, logger, startTestStack, ensureTemporalRuntime, type TestStack } from '../support/harness';

let stack: TestStack;
let worker: RunningWorkers | undefined;
const KEY = 'test-api-key-0123456789';
const uniq = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  // retentionDays is the worker's (it prunes); healthCheckIntervalSeconds the API's (it creates the schedule)
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0, retentionDays: 1 } } });
});
afterAll(async () => {
  const client = await stack.temporal.client();
  await client.schedule
    .getHandle(`schedule:missed-${uniq}`)
    .delete()
    .catch(() => undefined);
  await worker?.stop();
  await stack.close();
});

const startWorker = () => {
  ensureTemporalRuntime();
  return startWorkers({ config: stack.config, db: stack.db, logger, metrics: stack.metrics, address: env('ARMADA_TEST_TEMPORAL_ADDRESS'), namespace: stack.config.temporal.namespace, shutdownGraceMs: 2000 });
};

describe('scheduler recovery', () => {
  test('a schedule that fired while no worker ran executes once when a worker returns, not once per missed time', async () => {
    const app = stack.app('scheduler');
    const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) => app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });
    const name = `missed-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name, schedule: '@every 1s', tasks: [{ name: 't', type: 'script', script: 'echo caught up' }] })).statusCode).toBe(201);
    await new Promise((r) => setTimeout(r, 6000)); // ~6 scheduled times pass with no worker
    const returned = Date.now();
    worker = await startWorker();
    const first = await eventually(async () => {
      const { rows } = await stack.db.query(`SELECT * FROM scheduler_executions WHERE workflow = $1 AND status = 'completed' ORDER BY scheduled_at LIMIT 1`, [name]);
      return rows[0];
    }, 20_000);
    await inject('POST', `/api/v1/schedules/${name}/pause`);
    await new Promise((r) => setTimeout(r, 1500));
    const { rows } = await stack.db.query(`SELECT scheduled_at FROM scheduler_executions WHERE workflow = $1 AND scheduled_at < $2`, [name, new Date(returned - 500)]);
    expect(rows).toHaveLength(1); // the one start Temporal held for the missing worker; the rest were skipped
    expect(first.tasks[0].output).toBe('caught up\n');
  });

  test('a run survives an API restart: the execution finishes and a new API instance reports it', async () => {
    worker ??= await startWorker();
    const deps = { db: stack.db, config: stack.config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics };
    const first = await buildSchedulerApp(deps);
    const name = `restart-${uniq}`;
    const inject = (app: typeof first, method: 'GET' | 'POST', url: string, payload?: unknown) => app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });
    await inject(first, 'POST', '/api/v1/workflows', { name, tasks: [{ name: 'slow', type: 'script', script: 'sleep 2; echo survived' }] });
    const id = (await inject(first, 'POST', `/api/v1/workflows/${name}/run`)).json().executionId;
    await first.close(); // the API goes away while the script runs
    const second = await buildSchedulerApp(deps);
    const e = await eventually(async () => {
      const body = (await inject(second, 'GET', `/api/v1/executions/${id}`)).json();
      return body.status === 'completed' && body;
    }, 20_000);
    expect(e.tasks[0].output).toBe('survived\n');
    await second.close();
  });

  test('the maintenance schedule checks source health and prunes old executions', async () => {
    worker ??= await startWorker();
    const fake = await startFakeFlowBuilder();
    const config = { ...stack.config, file: { ...stack.config.file, scheduler: { healthCheckIntervalSeconds: 1, retentionDays: 1 } } };
    const app = await buildSchedulerApp({ db: stack.db, config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) => app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });
    const src = (await inject('POST', '/api/v1/sources', { name: `m-${uniq}`, source_type: 'flow-builder', url: fake.url })).json();
    await inject('POST', '/api/v1/workflows', { name: `old-${uniq}`, tasks: [{ name: 't', type: 'script', script: 'true' }] });
    await stack.db.query(
      `INSERT INTO scheduler_executions (id, workflow, workflow_id, temporal_workflow_id, trigger, status, started_at, completed_at)
       SELECT v.id::uuid, w.name, w.id, v.t, 'manual', 'completed', now() - v.age::interval, now() - v.age::interval
         FROM scheduler_workflows w, (VALUES ('11111111-1111-4111-8111-111111111111', 'x', '3 days'), ('22222222-2222-4222-8222-222222222222', 'y', '1 hour')) AS v(id, t, age)
        WHERE w.name = $1`,
      [`old-${uniq}`],
    );
    try {
      fake.mode = 'bad';
      await eventually(async () => (await inject('GET', `/api/v1/sources/${src.id}`)).json().status === 'inactive', 20_000, 200);
      await eventually(async () => {
        const { rows } = await stack.db.query(`SELECT id FROM scheduler_executions WHERE workflow = $1 ORDER BY id`, [`old-${uniq}`]);
        return rows.length === 1 && rows[0].id === '22222222-2222-4222-8222-222222222222';
      }, 10_000, 200);
      await recordCompletedHistory(stack, 'schedulerMaintenanceWorkflow', 'scheduler-maintenance-completed');
    } finally {
      const client = await stack.temporal.client();
      await client.schedule
        .getHandle(maintenanceScheduleId(config.temporal.taskQueue))
        .delete()
        .catch(() => undefined);
      await app.close();
      await fake.close();
    }
  });

  test('maintenance setup retries while Temporal is unreachable, warns, and creates the schedule once it is up', async () => {
    const proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'), 'refuse');
    const lines: { level: number; msg: string; failedTries?: number }[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const temporal = createTemporalHandle(proxy.address, stack.config.temporal.namespace);
    const config = { ...stack.config, temporal: { ...stack.config.temporal, taskQueue: `${stack.config.temporal.taskQueue}-m` }, file: { ...stack.config.file, scheduler: { healthCheckIntervalSeconds: 3600, retentionDays: 1 } } };
    const app = await buildSchedulerApp({ db: stack.db, config, keys: stack.keys, temporal, logger: createLogger('info', 'test', sink), metrics: stack.metrics });
    const scheduleId = maintenanceScheduleId(config.temporal.taskQueue);
    const client = await stack.temporal.client();
    try {
      await app.ready();
      const warns = () => lines.filter((l) => l.level === 40 && /maintenance schedule not set up yet/.test(l.msg));
      await eventually(async () => warns().length >= 1, 30_000, 100);
      // still unreachable for a while: no schedule, and the setup has not given up
      await new Promise((r) => setTimeout(r, 2000));
      await expect(client.schedule.getHandle(scheduleId).describe()).rejects.toThrow();
      proxy.setMode('forward');
      await eventually(async () => (await client.schedule.getHandle(scheduleId).describe()).scheduleId === scheduleId, 60_000, 250);
      const info = lines.find((l) => l.level === 30 && l.msg === 'maintenance schedule set up');
      expect(info?.failedTries).toBeGreaterThanOrEqual(1);
      expect(warns()[0]?.failedTries).toBe(1);
    } finally {
      await client.schedule
        .getHandle(scheduleId)
        .delete()
        .catch(() => undefined);
      await app.close();
      await temporal.close();
      await proxy.close();
    }
  }, 120_000);
});
