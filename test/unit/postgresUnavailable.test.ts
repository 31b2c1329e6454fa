/**
 * Which PostgreSQL errors are an outage (503, writers hold what they have) and what the client is told: unreachable,
 * short of a resource (SQLSTATE class 53), or taking no writes (25006, read-only). Any other error, including a
 * constraint or a syntax error, is not.
 */
import { isPostgresUnavailable, postgresUnavailableMessage } from '../../lib/db/pool';

const pgError = (code: string) => Object.assign(new Error('from postgres'), { code });

test.each([
  ['53100', /out of disk space: free space on its disk, then try again/],
  ['53200', /out of memory; try again/],
  ['53300', /no connection slot free \(too many connections\); try again/],
  ['53400', /short of a resource \(SQLSTATE 53400\); try again/],
  ['25006', /^The database \(PostgreSQL\) takes no writes now \(it is read-only: a standby, or default_transaction_read_only is on\); try again$/],
  ['ECONNREFUSED', /^The database \(PostgreSQL\) is unavailable; try again$/],
  ['57P01', /^The database \(PostgreSQL\) is unavailable; try again$/],
])('SQLSTATE/errno %s is an outage, told as %s', (code, message) => {
  expect(isPostgresUnavailable(pgError(code))).toBe(true);
  expect(postgresUnavailableMessage(pgError(code))).toMatch(message);
});

test.each(['23505', '22P02', '42601', '5310', '531000', '54000', '25001', '250060'])('%s is not an outage', (code) => {
  expect(isPostgresUnavailable(pgError(code))).toBe(false);
});

test('values that are not errors are not outages', () => {
  for (const v of [undefined, null, 'ECONNREFUSED', 53100, { code: 53100 }]) expect(isPostgresUnavailable(v)).toBe(false);
});

test("an activity step that gives up on PostgreSQL fails with the cause, never the server's address (clients read it as an attempt's error)", async () => {
  const { Client } = await import('pg');
  const { postgresOutageFailure, POSTGRES_UNAVAILABLE } = await import('../../activities/untilPostgresAnswers');
  const { freePort } = require('../support/ports') as { freePort(): Promise<number> };
  const port = await freePort(); // nothing listens there: a real refused connection
  const refused = await new Client({ connectionString: `postgres://armada@127.0.0.1:${port}/armada` }).connect().then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isPostgresUnavailable(refused)).toBe(true);
  expect(String((refused as Error).message)).toContain(`127.0.0.1:${port}`);
  const failure = postgresOutageFailure(refused, 600_000);
  expect(failure.message).toBe('the database (PostgreSQL) was unavailable (ECONNREFUSED) and did not answer again within 600 s');
  expect(failure.type).toBe(POSTGRES_UNAVAILABLE);
  expect(failure.nonRetryable).toBe(false);
  // without a code (a connection ended by the server), a plain cause
  expect(postgresOutageFailure(new Error('Connection terminated unexpectedly'), 1500).message).toBe(
    'the database (PostgreSQL) was unavailable (connection lost) and did not answer again within 2 s',
  );
});
