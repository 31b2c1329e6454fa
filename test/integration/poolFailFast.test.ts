/**
 * The pool tied to what is known of PostgreSQL (tiePoolToDependencyState): while it is known down the pool fails at
 * once, and drops the connections being opened, instead of waiting on a server that takes connections but does not
 * answer; a query already sent is left to its answer (the server may still run it). Real embedded PostgreSQL, behind a TCP proxy that holds every
 * byte for the freeze.
 */
import { classifyError } from '../../api/http/errorHandlers';
import { createPool } from '../../lib/db/pool';
import { createDependencyState, startDependencyProbes, tiePoolToDependencyState } from '../../lib/runtime/dependencies';
import { env, eventually, logger } from '../support/harness';
import { startTcpProxy } from '../support/tcpProxy';

test('a frozen PostgreSQL: once the probes call it down, a connection being opened and every new request fail at once with a 503, a query already sent waits for its answer; once it answers, the pool serves again', async () => {
  const url = new URL(env('ARMADA_TEST_DATABASE_URL'));
  const proxy = await startTcpProxy(`${url.hostname}:${url.port}`);
  const proxied = new URL(url.toString());
  [proxied.hostname, proxied.port] = proxy.address.split(':') as [string, string];
  const state = createDependencyState(logger);
  const pool = createPool(proxied.toString(), logger, { max: 4 });
  tiePoolToDependencyState(state, pool);
  const probes = startDependencyProbes(state, { databaseUrl: proxied.toString(), namespace: 'default', intervalMs: 100, timeoutMs: 300 });
  try {
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    proxy.setMode('hold'); // takes every byte, answers none: a frozen server or a partition
    const settled = (p: Promise<unknown>) => p.then((r) => ({ answered: r }), (err: unknown) => ({ failed: err }));
    // one query on the pooled connection (sent: the server has it), one waiting for a connection being opened
    const sent = settled(pool.query('SELECT 2 AS two'));
    const opening = settled(pool.query('SELECT 5 AS five'));
    await eventually(async () => state.isDown('postgres'), 10_000, 20);
    const dropped = (await Promise.race([opening, new Promise((r) => setTimeout(() => r('still waiting'), 2000).unref())])) as { failed?: unknown };
    expect(classifyError(dropped.failed)).toMatchObject({ statusCode: 503, code: 'SERVICE_UNAVAILABLE' });

    const t0 = Date.now();
    const refused = await pool.query('SELECT 3').catch((err: unknown) => err);
    expect(Date.now() - t0).toBeLessThan(500); // not the 10 s connect timeout
    expect(classifyError(refused)).toMatchObject({ statusCode: 503, message: 'The database (PostgreSQL) is unavailable; try again' });
    await expect(pool.connect()).rejects.toMatchObject({ code: '08006' });

    proxy.setMode('forward');
    // the query the server had is answered, not failed: a write's outcome is what the client is told
    expect(await sent).toMatchObject({ answered: { rows: [{ two: 2 }] } });
    await eventually(async () => !state.isDown('postgres'), 10_000, 20);
    expect((await pool.query('SELECT 4 AS four')).rows).toEqual([{ four: 4 }]);
  } finally {
    proxy.setMode('forward');
    await probes.stop();
    await pool.end();
    await proxy.close();
  }
});
