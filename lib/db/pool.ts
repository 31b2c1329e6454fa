/** The one PostgreSQL pool of a process, and the transaction helper. */
import { Client, Pool, type PoolClient, type PoolConfig } from 'pg';
import type { Logger } from '../logger';
import { storableParams } from './storableText';

/**
 * The pool's client: every query's parameters are made storable first (lib/db/storableText.ts), so text from an
 * outside process with a NUL or an unpaired surrogate is stored with U+FFFD instead of failing its statement. The
 * pool's own `query` runs through its clients' `query`, so this covers both it and transactions.
 */
export class StorableTextClient extends Client {
  // node-postgres' overloads: (text | config | submittable, values?, callback?)
  override query(...args: unknown[]): never {
    const [first, second] = args;
    if (Array.isArray(second)) args[1] = storableParams(second);
    else if (first !== null && typeof first === 'object' && Array.isArray((first as { values?: unknown }).values)) {
      const config = first as { values: unknown[]; submit?: unknown };
      const values = storableParams(config.values);
      // a submittable (a cursor, a stream) must stay the same object; a plain config is copied, never changed
      if (values !== config.values) args[0] = typeof config.submit === 'function' ? Object.assign(config, { values }) : { ...config, values };
    }
    return Reflect.apply(super.query, this, args) as never;
  }
}

export type Db = Pool;

/**
 * Creates the pool. Idle-client errors (a Postgres restart, a dropped connection) are logged, never thrown:
 * the pool replaces broken clients and the next query reconnects.
 */
export function createPool(connectionString: string, logger: Logger, extra: Partial<PoolConfig> = {}): Pool {
  const pool = new Pool({ connectionString, max: 10, idleTimeoutMillis: 30_000, connectionTimeoutMillis: 10_000, Client: StorableTextClient, ...extra });
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
