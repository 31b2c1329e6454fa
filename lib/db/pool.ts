/** The one PostgreSQL pool of a process, and the transaction helper. */
import { Pool, type PoolClient, type PoolConfig } from 'pg';
import type { Logger } from '../logger';

export type Db = Pool;

/**
 * Creates the pool. Idle-client errors (a Postgres restart, a dropped connection) are logged, never thrown:
 * the pool replaces broken clients and the next query reconnects.
 */
export function createPool(connectionString: string, logger: Logger, extra: Partial<PoolConfig> = {}): Pool {
  const pool = new Pool({ connectionString, max: 10, idleTimeoutMillis: 30_000, connectionTimeoutMillis: 10_000, ...extra });
  pool.on('error', (err) => logger.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'idle postgres client error'));
  pool.on('connect', (client) => {
    client.on('error', (err) => logger.warn({ err: { message: err.message } }, 'postgres client error'));
  });
  return pool;
}

/** Runs fn inside BEGIN/COMMIT, rolling back on any error; the client is always released. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    throw err;
  } finally {
    client.release(broken);
  }
}

/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<Pool, 'query'> | PoolClient;
