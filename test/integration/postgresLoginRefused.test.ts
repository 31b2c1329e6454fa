/**
 * PostgreSQL refusing the service's login (a wrong password in DATABASE_URL, a password changed under a running
 * service) or its database (no such database): the service's configuration, not the request. Each service answers a
 * 503 in its documented shape that says what the operator must correct, not a bare 500 "Internal server error"
 * (seen when the benchmarks were handed infra's masked URL).
 */
import { startTestStack, type TestStack } from '../support/harness';

let stack: TestStack | undefined;
let wrongDatabase: TestStack | undefined;
let dbUrl: string;

beforeAll(async () => {
  // the run's database server, as a test stack reaches it (its own database is dropped at close: the second test's)
  const good = await startTestStack({ services: ['task'] });
  dbUrl = good.dbUrl;
  await good.close();
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await wrongDatabase?.close();
});

/** The app of `service` in `s` (started by the test: present). */
const appOf = (s: TestStack, service: 'task' | 'scheduler') => {
  const app = s.apps[service];
  if (!app) throw new Error(`no ${service} app`);
  return app;
};

const withPassword = (url: string, password: string) => {
  const u = new URL(url);
  u.password = password;
  return u.toString();
};

test('a wrong password: the task service and the scheduler answer 503 naming DATABASE_URL, in their shapes', async () => {
  stack = await startTestStack({ services: ['task', 'scheduler'], databaseUrl: withPassword(dbUrl, 'not-the-password') });
  const task = await appOf(stack, 'task').inject({ method: 'GET', url: '/api/projects' });
  expect(task.statusCode).toBe(503);
  const body = task.json();
  expect(body.success).toBe(false);
  expect(body.error.code).toBe('SERVICE_UNAVAILABLE');
  expect(body.error.message).toMatch(/refused this service's login \(SQLSTATE 28P01\): its operator must correct the user or password of DATABASE_URL/);
  expect(task.body).not.toContain('not-the-password');
  expect(task.body).not.toMatch(/\n\s+at /);

  const sched = await appOf(stack, 'scheduler').inject({ method: 'GET', url: '/api/v1/workflows', headers: { 'x-api-key': stack.keys.scheduler } });
  expect(sched.statusCode).toBe(503);
  expect(sched.json().detail).toMatch(/SQLSTATE 28P01/);
}, 120_000);

test('no such database: 503 saying to correct DATABASE_URL or create the database', async () => {
  const u = new URL(dbUrl);
  u.pathname = '/armada_no_such_database';
  wrongDatabase = await startTestStack({ services: ['task'], databaseUrl: u.toString() });
  const r = await appOf(wrongDatabase, 'task').inject({ method: 'GET', url: '/api/tasks' });
  expect(r.statusCode).toBe(503);
  expect(r.json().error.message).toMatch(/no database of the name DATABASE_URL gives/);
}, 120_000);
