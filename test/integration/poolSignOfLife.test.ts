/**
 * A pooled client that connects to PostgreSQL marks it up at once (a sign of life), so /health does not keep saying
 * "down" for up to a probe interval after requests are already being served again. Real embedded PostgreSQL.
 */
import { createPool } from '../../lib/db/pool';
import { createDependencyState, markUpOnPoolConnect } from '../../lib/runtime/dependencies';
import { env, logger } from '../support/harness';

test('a pool connect marks PostgreSQL up again', async () => {
  const state = createDependencyState(logger);
  state.markDown('postgres', 'killed a moment ago');
  const pool = createPool(env('ARMADA_TEST_DATABASE_URL'), logger, { max: 1 });
  try {
    markUpOnPoolConnect(state, pool);
    expect(state.isDown('postgres')).toBe(true);
    await pool.query('SELECT 1');
    expect(state.isDown('postgres')).toBe(false);
  } finally {
    await pool.end();
  }
});
