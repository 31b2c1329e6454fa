import crypto from 'node:crypto';
import { eventually, startTestStack, type TestStack } from '../support/harness';

// 80 fast no-op tasks through one agent whose actor continues-as-new every 20 finished tasks: four runs end
// continued-as-new and the fifth goes on with the counters (200 tasks every 50 took 72 s of a CI run for the same four).
const AGENT = `noop-${crypto.randomBytes(3).toString('hex')}`;
const KEY = 'test-api-key-0123456789';
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: { noop: { command: ['/bin/sh', '-c', 'cat >/dev/null; echo ok'] } },
      multiAgent: { agents: [{ name: AGENT, llm: 'noop' }], continueAsNewEvery: 20 },
    },
  });
});
afterAll(async () => {
  const client = await stack.temporal.client();
  await client.workflow
    .getHandle(`agent:${AGENT}`)
    .terminate('test over')
    .catch(() => undefined);
  await stack.close();
});

const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });

test('after 80 tasks the actor has continued-as-new and kept its counters', async () => {
  const client = await stack.temporal.client();
  const handle = client.workflow.getHandle(`agent:${AGENT}`);
  const first = await eventually(async () => (await handle.describe()).runId);

  const priorities = ['high', 'normal', 'low', 'medium'];
  for (let batch = 0; batch < 8; batch++) {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call('POST', '/api/v1/tasks', { agent: AGENT, task: `noop ${batch * 10 + i}`, priority: priorities[i % 4] })),
    );
    for (const r of results) expect(r.statusCode).toBe(201);
  }

  await eventually(
    async () => {
      const { total } = (await call('GET', `/api/v1/tasks?agent=${AGENT}&status=completed&limit=1`)).json();
      return total === 80;
    },
    240_000,
    500,
  );
  const failed = (await call('GET', `/api/v1/tasks?agent=${AGENT}&status=failed`)).json();
  expect(failed.total).toBe(0);

  const status = await eventually(async () => {
    const s = (await call('GET', `/api/v1/agents/${AGENT}/status`)).json();
    return s.tasksCompleted === 80 ? s : undefined;
  });
  expect(status).toMatchObject({ status: 'active', currentTask: null, queued: 0, tasksFailed: 0, restarts: 0 });

  const now = await handle.describe();
  expect(now.runId).not.toBe(first);
  expect(now.status.name).toBe('RUNNING');
  // Every 20 tasks one run ended as continued-as-new: 4 of them, each history far below 80 tasks' worth.
  const runs = await eventually(async () => {
    const seen: { status: string; historyLength: number }[] = [];
    for await (const w of client.workflow.list({ query: `WorkflowId = 'agent:${AGENT}'` })) seen.push({ status: w.status.name, historyLength: w.historyLength });
    return seen.filter((r) => r.status === 'CONTINUED_AS_NEW').length >= 4 ? seen : undefined;
  }, 30_000, 500);
  expect(runs.filter((r) => r.status === 'CONTINUED_AS_NEW')).toHaveLength(4);
  expect(runs.filter((r) => r.status === 'RUNNING')).toHaveLength(1);
}, 300_000);
