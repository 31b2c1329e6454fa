/**
 * Which PostgreSQL errors are an outage (503, writers hold what they have) and what the client is told: unreachable,
 * or short of a resource (SQLSTATE class 53). Any other error, including a constraint or a syntax error, is not.
 */
import { isPostgresUnavailable, postgresUnavailableMessage } from '../../lib/db/pool';

const pgError = (code: string) => Object.assign(new Error('from postgres'), { code });

test.each([
  ['53100', /out of disk space: free space on its disk, then try again/],
  ['53200', /out of memory; try again/],
  ['53300', /no connection slot free \(too many connections\); try again/],
  ['53400', /short of a resource \(SQLSTATE 53400\); try again/],
  ['ECONNREFUSED', /^The database \(PostgreSQL\) is unavailable; try again$/],
  ['57P01', /^The database \(PostgreSQL\) is unavailable; try again$/],
])('SQLSTATE/errno %s is an outage, told as %s', (code, message) => {
  expect(isPostgresUnavailable(pgError(code))).toBe(true);
  expect(postgresUnavailableMessage(pgError(code))).toMatch(message);
});

test.each(['23505', '22P02', '42601', '5310', '531000', '54000'])('%s is not an outage', (code) => {
  expect(isPostgresUnavailable(pgError(code))).toBe(false);
});

test('values that are not errors are not outages', () => {
  for (const v of [undefined, null, 'ECONNREFUSED', 53100, { code: 53100 }]) expect(isPostgresUnavailable(v)).toBe(false);
});
