/**
 * The multi-agent API in front of a Temporal that takes the connection but does not answer (a frozen or stalled
 * server; here a TCP proxy that holds every byte): an assignment or a restart is a 503 within its deadline, not a
 * request left hanging (before: as long as Temporal stayed silent, 10 minutes and more). The worker talks to
 * Temporal directly.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { TEST_API_KEY, env, eventually, logger, startTestStack, type TestStack } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
// Workflow ids (agent:<name>) are global to the Temporal namespace: a name of our own.
const NAMED = `stalled-${crypto.randomBytes(3).toString('hex')}`;

let stack: TestStack;
let proxy: TcpProxy;
let proxied: TemporalHandle;
let app: FastifyInstance;

beforeAll(async () => {
  stack = await startTestStack({
    services: [],
    worker: true,
    file: {
      agents: { scripted: { command: [process.execPath, path.join(FIXTURES, 'scriptedAgent.js')] } },
      multiAgent: { agents: [{ name: NAMED, llm: 'scripted' }] },
    },
  });
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
  proxied = createTemporalHandle(proxy.address, stack.config.temporal.namespace);
  app = await buildService('agents', { db: stack.db, config: stack.config, keys: stack.keys, temporal: proxied, logger, metrics: stack.metrics });
  stack.apps.agents = app;
  await app.ready();
});
afterAll(async () => {
  proxy.setMode('forward');
  const client = await stack.temporal.client();
  await client.workflow
    .getHandle(`agent:${NAMED}`)
    .terminate('test over')
    .catch(() => undefined);
  await stack.close(); // closes the app too
  await proxied.close();
  await proxy.close();
});

const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

test('assign and restart while Temporal does not answer: a 503 within the deadline, the task failed and never run; once Temporal answers, assignments run', async () => {
  await eventually(async () => (await call('GET', `/api/v1/agents/${NAMED}/status`)).json().status === 'active', 30_000);

  proxy.setMode('hold');
  let t0 = Date.now();
  const assigned = await call('POST', '/api/v1/tasks', { agent: NAMED, task: 'sleep:10 while Temporal is silent' });
  expect(Date.now() - t0).toBeLessThan(20_000);
  expect(assigned.statusCode).toBe(503);
  expect(assigned.json().detail).toMatch(/^Agent runtime unavailable: /);
  const { rows } = await stack.db.query<{ id: string; status: string; error: string }>('SELECT id, status, error FROM agent_tasks WHERE agent = $1', [NAMED]);
  expect(rows).toEqual([{ id: expect.any(String), status: 'failed', error: expect.stringMatching(/^could not be queued: /) }]);
  const lost = rows[0]?.id as string;

  t0 = Date.now();
  const restarted = await call('POST', `/api/v1/agents/${NAMED}/restart`);
  expect(Date.now() - t0).toBeLessThan(30_000); // the status look-up first (5 s), then the restart's own deadline
  expect(restarted.statusCode).toBe(503);
  expect(restarted.json().detail).toMatch(/^Agent runtime unavailable: /);

  proxy.setMode('forward'); // what was held is delivered now: the assignment reaches the actor, which skips the failed row
  const res = await call('POST', '/api/v1/tasks', { agent: NAMED, task: 'sleep:10 after the stall' });
  expect(res.statusCode).toBe(201);
  const id: string = res.json().taskId;
  const done = await eventually(async () => {
    const t = (await call('GET', `/api/v1/tasks/${id}`)).json();
    return t.status === 'completed' ? t : undefined;
  }, 30_000);
  expect(done.result).toMatch(/done: sleep:10 after the stall$/);
  expect((await call('GET', `/api/v1/tasks/${lost}`)).json()).toMatchObject({ status: 'failed', startedAt: null, error: expect.stringMatching(/^could not be queued: /) });
}, 90_000);
