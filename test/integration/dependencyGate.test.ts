/**
 * While PostgreSQL is known down (the probes got no answer: a frozen host, a partition), requests that need it answer
 * 503 at once in each service's error shape, before they take a pooled connection; /health says what is down, and
 * /metrics and the OpenAPI documents are still served. Once it is known up, the same requests are served again.
 * Real services on a real database; the dependency state is what `armada api`'s probes would set.
 */
import { createDependencyState, type DependencyState } from '../../lib/runtime/dependencies';
import { logger, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';

let stack: TestStack;
let deps: DependencyState;

beforeAll(async () => {
  deps = createDependencyState(logger);
  stack = await startTestStack({ services: ['task', 'scheduler'], dependencies: deps });
});
afterAll(async () => stack?.close());
afterEach(() => deps.markUp('postgres'));

test('task service: 503 in the envelope at once, with Retry-After; served again once PostgreSQL is back', async () => {
  const task = stack.app('task');
  expect((await task.inject({ method: 'GET', url: '/api/projects' })).statusCode).toBe(200);
  deps.markDown('postgres', 'no answer (test)');
  const idle = stack.db.idleCount + stack.db.totalCount;
  const t0 = Date.now();
  const r = await task.inject({ method: 'POST', url: '/api/projects', payload: { name: 'p', repository: { url: '/nonexistent' } } });
  expect(Date.now() - t0).toBeLessThan(1000);
  expect(r.statusCode).toBe(503);
  expect(r.headers['retry-after']).toBe('1');
  expect(r.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/PostgreSQL.*try again/) } });
  expect(r.body).not.toMatch(/at .*\.ts:\d+/);
  expect(stack.db.idleCount + stack.db.totalCount).toBe(idle); // the pool was not asked
  expect((await task.inject({ method: 'GET', url: '/api/tasks?limit=1' })).statusCode).toBe(503);
  const health = await task.inject({ method: 'GET', url: '/health' });
  expect(health.statusCode).toBe(503);
  expect(health.json()).toMatchObject({ status: 'unavailable', down: ['postgres'] });
  // liveness is not readiness: the process is fine, so a probe must not restart it for its dependency's outage
  const live = await task.inject({ method: 'GET', url: '/health/live' });
  expect({ status: live.statusCode, body: live.json() }).toMatchObject({ status: 200, body: { status: 'alive', service: 'task' } });
  expect((await task.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  expect((await task.inject({ method: 'GET', url: '/api/openapi.json' })).statusCode).toBe(200);
  deps.markUp('postgres');
  expect((await task.inject({ method: 'GET', url: '/api/projects' })).statusCode).toBe(200);
  expect((await task.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
});

test('scheduler: 503 as {detail} at once; its OpenAPI document is still served', async () => {
  const scheduler = stack.app('scheduler');
  const headers = { 'x-api-key': TEST_API_KEY };
  expect((await scheduler.inject({ method: 'GET', url: '/api/v1/workflows', headers })).statusCode).toBe(200);
  deps.markDown('postgres', 'no answer (test)');
  const r = await scheduler.inject({ method: 'GET', url: '/api/v1/workflows', headers });
  expect(r.statusCode).toBe(503);
  expect(r.json()).toEqual({ detail: expect.stringMatching(/PostgreSQL.*try again/) });
  expect((await scheduler.inject({ method: 'GET', url: '/api/v1/openapi.json', headers })).statusCode).toBe(200);
  // liveness needs no key (a probe has none) and no database
  expect((await scheduler.inject({ method: 'GET', url: '/health/live' })).json()).toMatchObject({ status: 'alive', service: 'scheduler' });
  deps.markUp('postgres');
  expect((await scheduler.inject({ method: 'GET', url: '/api/v1/workflows', headers })).statusCode).toBe(200);
});
