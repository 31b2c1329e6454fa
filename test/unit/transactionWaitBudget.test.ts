/**
 * The wait budget of a transaction of the API (lib/db/pool.ts withTransaction): twice the lock_timeout for its
 * connection and its locks together. The lock_timeout it BEGINs with is the connection's own while its connection came
 * at once, and half of what is left of the budget after a longer wait (PostgreSQL times a row's two lock waits apart).
 */
import { beginWithin, sessionLimits, waitBudgetOf, workerPoolOptions } from '../../lib/db/pool';

test('twice the lock_timeout in all; the lock_timeout is cut to half of what the connection wait left', () => {
  expect(waitBudgetOf(5000)).toBe(10_000);
  expect(beginWithin(5000, 0)).toBe('BEGIN');
  expect(beginWithin(5000, 99)).toBe('BEGIN'); // a connection that came at once: the connection's own limit
  expect(beginWithin(5000, 4000)).toBe("BEGIN; SET LOCAL lock_timeout = '3000ms'");
  expect(beginWithin(5000, 9990)).toBe("BEGIN; SET LOCAL lock_timeout = '5ms'");
  expect(beginWithin(5000, 10_000)).toBe("BEGIN; SET LOCAL lock_timeout = '1ms'"); // never 0, which would be no limit
});

test('the session limits of the two pools: the API gets all three, the workers only the idle one and one connect wait', () => {
  expect(sessionLimits({ lockTimeoutMs: 5000, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 30_000 })).toEqual({
    lock_timeout: 5000,
    statement_timeout: 30_000,
    idle_in_transaction_session_timeout: 30_000,
  });
  expect(sessionLimits({ lockTimeoutMs: 0, statementTimeoutMs: 0, idleInTransactionTimeoutMs: 0 })).toEqual({});
  expect(workerPoolOptions({ workerDatabase: { connectTimeoutMs: 60_000, idleInTransactionTimeoutMs: 30_000 } })).toEqual({
    max: 20,
    connectionTimeoutMillis: 60_000,
    idle_in_transaction_session_timeout: 30_000,
  });
});
