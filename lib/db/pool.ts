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

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);

/**
 * The query failed because PostgreSQL could not be reached or went away (refused, reset, shutting down, starting up,
 * a pool connect timeout): the API answers 503, not 500.
 */
export function isPostgresUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return true;
  return typeof e.message === 'string' && /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/.test(e.message);
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
