/**
 * A request that PostgreSQL rolls back to break a deadlock with a concurrent transaction (SQLSTATE 40P01; 40001 the
 * same) answers 503 with Retry-After in the service's error shape: nothing of it was written and the same request
 * again succeeds. It was a 500 "Internal server error", as if Armada had a bug. A real deadlock on the real
 * database: a test route locks row 1 then row 2, while the test's own transaction locks row 2 then row 1.
 */
import type { FastifyInstance } from 'fastify';
import { Client } from 'pg';
import { withTransaction } from '../../lib/db/pool';
import { eventually, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';

let stack: TestStack;

const addDeadlockRoute = (_name: string, app: FastifyInstance) => {
  app.post('/api/v1/test-deadlock', async () => {
    await withTransaction(stack.db, async (c) => {
      await c.query("SET LOCAL application_name = 'deadlock-victim'");
      await c.query('SELECT id FROM deadlock_probe WHERE id = 1 FOR UPDATE');
      await c.query('SELECT id FROM deadlock_probe WHERE id = 2 FOR UPDATE'); // waits for the test's transaction
    });
    return { ok: true };
  });
};

/** A route whose statement PostgreSQL stops for one of its limits: `SET LOCAL` of the limit, then the statement. */
const addLimitRoutes = (app: FastifyInstance) => {
  app.post('/api/v1/test-statement-timeout', async () => {
    await withTransaction(stack.db, async (c) => {
      await c.query("SET LOCAL statement_timeout = '50ms'");
      await c.query('SELECT pg_sleep(5)');
    });
    return { ok: true };
  });
  app.post('/api/v1/test-lock-timeout', async () => {
    await withTransaction(stack.db, async (c) => {
      await c.query("SET LOCAL lock_timeout = '50ms'");
      await c.query('INSERT INTO deadlock_probe VALUES (3)');
      await c.query('SELECT id FROM deadlock_probe WHERE id = 1 FOR UPDATE'); // held by the test's transaction
    });
    return { ok: true };
  });
};

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task', 'scheduler'],
    beforeReady: (name, app) => {
      addDeadlockRoute(name, app);
      addLimitRoutes(app);
    },
  });
  await stack.db.query('CREATE TABLE deadlock_probe (id int PRIMARY KEY); INSERT INTO deadlock_probe VALUES (1), (2)');
});
afterAll(async () => stack?.close());

async function deadlocked(app: FastifyInstance, headers: Record<string, string>) {
  const other = new Client({ connectionString: stack.dbUrl });
  await other.connect();
  try {
    await other.query("SET deadlock_timeout = '20s'"); // so PostgreSQL picks the request's transaction as the victim
    await other.query('BEGIN');
    await other.query('SELECT id FROM deadlock_probe WHERE id = 2 FOR UPDATE');
    const answer = app.inject({ method: 'POST', url: '/api/v1/test-deadlock', headers }).then((r) => r); // sent now, not when awaited
    await eventually(async () => {
      // asked on another connection: inside its transaction `other` sees a snapshot of pg_stat_activity
      const { rows } = await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'deadlock-victim' AND wait_event_type = 'Lock'");
      return rows.length > 0;
    });
    const mine = other.query('SELECT id FROM deadlock_probe WHERE id = 1 FOR UPDATE'); // the cycle closes
    const res = await answer;
    await mine;
    await other.query('COMMIT');
    return res;
  } finally {
    await other.end();
  }
}

test('task service: a deadlock victim is a 503 in the envelope, with Retry-After', async () => {
  const res = await deadlocked(stack.app('task'), {});
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe('1');
  expect(res.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/concurrent change.*try again/) } });
  // the same request again, with no one in its way
  expect((await stack.app('task').inject({ method: 'POST', url: '/api/v1/test-deadlock' })).statusCode).toBe(200);
});

test('scheduler: a deadlock victim is a 503 {detail}, with Retry-After', async () => {
  const res = await deadlocked(stack.app('scheduler'), { 'x-api-key': TEST_API_KEY });
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe('1');
  expect(res.json()).toEqual({ detail: expect.stringMatching(/concurrent change.*try again/) });
});

test("a statement stopped by the server's statement_timeout is a 503 with Retry-After, not a 500, in each shape", async () => {
  const task = await stack.app('task').inject({ method: 'POST', url: '/api/v1/test-statement-timeout' });
  expect(task.statusCode).toBe(503);
  expect(task.headers['retry-after']).toBe('1');
  expect(task.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/statement_timeout.*try again/) } });
  const scheduler = await stack.app('scheduler').inject({ method: 'POST', url: '/api/v1/test-statement-timeout', headers: { 'x-api-key': TEST_API_KEY } });
  expect(scheduler.statusCode).toBe(503);
  expect(scheduler.json()).toEqual({ detail: expect.stringMatching(/statement_timeout.*try again/) });
});

test("a lock not granted within the server's lock_timeout is a 503 with Retry-After; nothing of the request is written", async () => {
  const other = new Client({ connectionString: stack.dbUrl });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query('SELECT id FROM deadlock_probe WHERE id = 1 FOR UPDATE');
    const res = await stack.app('task').inject({ method: 'POST', url: '/api/v1/test-lock-timeout' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/lock_timeout.*try again/) } });
    await other.query('COMMIT');
  } finally {
    await other.end();
  }
  // the row the request inserted before its lock wait was rolled back with it
  expect((await stack.db.query('SELECT 1 FROM deadlock_probe WHERE id = 3')).rowCount).toBe(0);
});
