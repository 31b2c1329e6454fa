/**
 * The worker's definition cache (beginRun, docs/scheduler.md#definition-cache): runs start from the cached workflow
 * and source, and a run fired right after a change committed uses the changed definition — whether the change came
 * through the API or plain SQL, and while the cache's LISTEN connection is being re-established. What reached the fake
 * platform (key, address, input) is the proof; the cache's counter shows the cache was in use.
 */
import { WORKER_LISTENER_APPLICATION_NAME } from '../../workers/createWorker';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { eventually, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let a: FakeFlowBuilder;
let b: FakeFlowBuilder;
const uniq = Math.random().toString(36).slice(2, 8);
const WORKFLOW = `cached-${uniq}`;
let sourceId: string;

beforeAll(async () => {
  stack = await startSchedulerStack();
  a = await startFakeFlowBuilder();
  b = await startFakeFlowBuilder();
});
afterAll(async () => {
  await a.close();
  await b.close();
  await closeSchedulerStack(stack);
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => schedulerInject(stack)(method, url, payload);

interface Execution {
  status: string;
  error: string | null;
}

async function waitFor(id: string): Promise<Execution> {
  return eventually(async () => {
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json() as Execution;
    return e.status !== 'running' && e;
  }, 40_000);
}

/** A manual run, sent right after whatever the caller committed; resolves with its execution once it ended. */
async function run(): Promise<Execution> {
  const r = await inject('POST', `/api/v1/workflows/${WORKFLOW}/run`);
  expect(r.statusCode).toBe(200);
  return waitFor(r.json().executionId);
}

/** How beginRun read definitions so far, by outcome (armada_scheduler_definition_cache_total). */
async function outcomes(): Promise<Record<string, number>> {
  const metric = stack.metrics.registry.getSingleMetric('armada_scheduler_definition_cache_total');
  const out: Record<string, number> = { hit: 0, miss: 0, bypass: 0 };
  for (const v of (await metric?.get())?.values ?? []) out[String(v.labels.outcome)] = v.value;
  return out;
}

const runRequests = (fake: FakeFlowBuilder) => fake.requests.filter((q) => q.method === 'POST' && q.path.startsWith('/api/v1/run/'));
const lastRun = (fake: FakeFlowBuilder) => runRequests(fake).at(-1);
const lastInput = (fake: FakeFlowBuilder) => (lastRun(fake)?.body as { input_value?: string } | undefined)?.input_value;

describe('definition cache of scheduled runs', () => {
  test('runs start from the cache: the first reads PostgreSQL, the next ones do not', async () => {
    const source = await inject('POST', '/api/v1/sources', { name: `src-${uniq}`, source_type: 'flow-builder', url: a.url, api_key: 'key-1' });
    expect(source.statusCode).toBe(201);
    sourceId = source.json().id;
    const created = await inject('POST', '/api/v1/workflows', {
      name: WORKFLOW,
      schedule: '0 0 1 1 *',
      tasks: [{ name: 'f', type: 'flow', source: sourceId, flow: FAKE_FLOWS.summarise.id, input: 'first' }],
    });
    expect(created.statusCode).toBe(201);
    const before = await outcomes();
    expect((await run()).status).toBe('completed');
    expect((await run()).status).toBe('completed');
    expect((await run()).status).toBe('completed');
    const after = await outcomes();
    expect(after.miss - before.miss).toBe(1);
    expect(after.hit - before.hit).toBe(2);
    expect(runRequests(a).map((q) => [q.apiKey, (q.body as { input_value: string }).input_value])).toEqual([
      ['key-1', 'first'],
      ['key-1', 'first'],
      ['key-1', 'first'],
    ]);
  });

  test('a run fired right after a source edit committed sends with the edited key, to the edited address, and not at all once inactive', async () => {
    expect((await inject('PATCH', `/api/v1/sources/${sourceId}`, { api_key: 'key-2' })).statusCode).toBe(200);
    expect((await run()).status).toBe('completed');
    expect(lastRun(a)?.apiKey).toBe('key-2');

    // fired by the Temporal Schedule itself, right after the PATCH answered
    expect((await inject('PATCH', `/api/v1/sources/${sourceId}`, { url: b.url })).statusCode).toBe(200);
    const client = await stack.temporal.client();
    const runsBefore = runRequests(b).length;
    await client.schedule.getHandle(`schedule:${WORKFLOW}`).trigger();
    await eventually(async () => runRequests(b).length > runsBefore, 40_000);
    expect(lastRun(b)?.apiKey).toBe('key-2');
    const scheduled = await eventually(async () => {
      const { rows } = await stack.db.query(`SELECT id, status FROM scheduler_executions WHERE workflow = $1 AND trigger = 'schedule'`, [WORKFLOW]);
      return rows[0]?.status === 'completed' && rows[0];
    }, 40_000);
    expect(scheduled.status).toBe('completed');
    const runsOnA = runRequests(a).length;

    expect((await inject('PATCH', `/api/v1/sources/${sourceId}`, { status: 'inactive' })).statusCode).toBe(200);
    const stopped = await run();
    expect([stopped.status, stopped.error]).toEqual(['failed', `Task f failed: source src-${uniq} is inactive`]);
    expect((await inject('PATCH', `/api/v1/sources/${sourceId}`, { status: 'active' })).statusCode).toBe(200);
    expect((await run()).status).toBe('completed');
    expect(runRequests(a).length).toBe(runsOnA);
  });

  test('a run right after the tasks were changed in plain SQL uses the new tasks; a deleted workflow does not run', async () => {
    await run(); // cached again
    const hitsBefore = (await outcomes()).hit;
    await stack.db.query(`UPDATE scheduler_workflows SET tasks = jsonb_set(tasks, '{0,input}', '"edited in SQL"') WHERE name = $1`, [WORKFLOW]);
    expect((await run()).status).toBe('completed');
    expect(lastInput(b)).toBe('edited in SQL');
    await run();
    expect((await outcomes()).hit).toBeGreaterThan(hitsBefore);

    // a health check's bookkeeping is not a change of what a run reads: the cache stays
    const before = await outcomes();
    await stack.db.query(`UPDATE scheduler_sources SET last_health_at = now(), last_health_ok = true WHERE id = $1`, [sourceId]);
    await run();
    expect((await outcomes()).hit).toBe(before.hit + 1);

    // deleted under a cached definition: the run finds no workflow (it returns "deleted" without a request)
    const requests = runRequests(b).length;
    const client = await stack.temporal.client();
    expect((await inject('DELETE', `/api/v1/workflows/${WORKFLOW}`)).statusCode).toBe(200);
    const handle = await client.workflow.start('workflowRunWorkflow', {
      taskQueue: stack.config.temporal.taskQueue,
      workflowId: `deleted-${uniq}`,
      args: [{ workflow: WORKFLOW, trigger: 'manual' }],
    });
    expect(await handle.result()).toBe('deleted');
    expect(runRequests(b).length).toBe(requests);
  });

  test('while the LISTEN connection is lost and re-established, runs read PostgreSQL and still see every change', async () => {
    const created = await inject('POST', '/api/v1/workflows', {
      name: WORKFLOW,
      tasks: [{ name: 'f', type: 'flow', source: sourceId, flow: FAKE_FLOWS.summarise.id, input: 'recreated' }],
    });
    expect(created.statusCode).toBe(201);
    await run();
    await run(); // cached
    const { rows } = await stack.db.query(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [WORKER_LISTENER_APPLICATION_NAME]);
    expect(rows.length).toBeGreaterThan(0);
    await stack.db.query(`UPDATE scheduler_workflows SET tasks = jsonb_set(tasks, '{0,input}', '"edited while deaf"') WHERE name = $1`, [WORKFLOW]);
    expect((await run()).status).toBe('completed');
    expect(lastInput(b)).toBe('edited while deaf');
    // reconnected (after ~1 s): the cache serves again, and a change after that is seen too
    await eventually(async () => {
      const before = (await outcomes()).hit;
      await run();
      return (await outcomes()).hit > before;
    }, 20_000, 200);
    await stack.db.query(`UPDATE scheduler_workflows SET tasks = jsonb_set(tasks, '{0,input}', '"edited after"') WHERE name = $1`, [WORKFLOW]);
    expect((await run()).status).toBe('completed');
    expect(lastInput(b)).toBe('edited after');
  });
});
