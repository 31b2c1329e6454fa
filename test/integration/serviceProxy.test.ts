/**
 * The board reaches the scheduler, agents and traces services through the task service: /svc/<service>/… is
 * forwarded with that service's X-API-Key (api/task/serviceProxy.ts). The traces service listens on a real port here.
 */
import type { FastifyInstance } from 'fastify';
import { startTestStack, type TestStack } from '../support/harness';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };
const KEY = 'proxy-task-key-0123456789';

let stack: TestStack;
let task: FastifyInstance;

beforeAll(async () => {
  const tracesPort = await freePort();
  const deadPort = await freePort();
  stack = await startTestStack({
    services: ['task', 'traces'],
    env: { ARMADA_TASK_API_KEY: KEY, ARMADA_TRACES_URL: `http://127.0.0.1:${tracesPort}`, ARMADA_AGENTS_URL: `http://127.0.0.1:${deadPort}` },
  });
  await stack.app('traces').listen({ port: tracesPort, host: '127.0.0.1' });
  task = stack.app('task');
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const auth = { authorization: `Bearer ${KEY}` };

test('a call through /svc/traces reaches the traces service with its key and answers its status and body', async () => {
  const created = await task.inject({
    method: 'POST',
    url: '/svc/traces/api/v1/traces',
    headers: { ...auth, 'content-type': 'application/json' },
    payload: { messageId: 'proxy-msg-1', instance: 'board', to: '+15550001111', message: 'hello through the proxy' },
  });
  expect(created.statusCode).toBe(201);
  expect(created.json()).toMatchObject({ messageId: 'proxy-msg-1', status: 'sent' });

  // the same row, read directly from the traces service with its own key
  const direct = await stack.app('traces').inject({ method: 'GET', url: '/api/v1/traces?instance=board', headers: { 'x-api-key': stack.keys.traces } });
  expect(direct.statusCode).toBe(200);
  expect(JSON.stringify(direct.json())).toContain('proxy-msg-1');

  const listed = await task.inject({ method: 'GET', url: '/svc/traces/api/v1/traces?instance=board', headers: auth });
  expect(listed.statusCode).toBe(200);
  expect(listed.json()).toEqual(direct.json());
});

test("the service's own errors pass through in its {detail} shape", async () => {
  const res = await task.inject({ method: 'GET', url: '/svc/traces/api/v1/traces/does-not-exist', headers: auth });
  expect(res.statusCode).toBe(404);
  expect(res.json()).toEqual({ detail: expect.any(String) });
});

test("the task service's key is required; the proxied service's key never is asked of the browser", async () => {
  const res = await task.inject({ method: 'GET', url: '/svc/traces/api/v1/traces' });
  expect(res.statusCode).toBe(401);
  expect(res.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
});

test('a service that does not answer is a 503 naming it', async () => {
  const res = await task.inject({ method: 'GET', url: '/svc/agents/api/v1/agents', headers: auth });
  expect(res.statusCode).toBe(503);
  expect(res.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'The agents service is unavailable; try again' } });
});

test('an unknown service is a JSON 404', async () => {
  const res = await task.inject({ method: 'GET', url: '/svc/nope/x', headers: auth });
  expect(res.statusCode).toBe(404);
  expect(res.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
});
