/** The one PostgreSQL pool of a process, and the transaction helper. */
import { Client, Pool, type PoolClient, type PoolConfig } from 'pg';
import type { Logger } from '../logger';
import { isClosedAsDead, watchForDeadConnections } from './deadConnections';
import { storableParams } from './storableText';

/**
 * The pool's client: every query's parameters are made storable first (lib/db/storableText.ts), so text from an
 * outside process with a NUL or an unpaired surrogate is stored with U+FFFD instead of failing its statement. The
 * pool's own `query` runs through its clients' `query`, so this covers both it and transactions.
 */
export class StorableTextClient extends Client {
  /** Named statements this connection prepared before their tables changed shape: prepared again on next use. */
  private readonly stalePlans = new Set<string>();

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
    const name = namedStatement(args);
    if (!name) return Reflect.apply(super.query, this, args) as never;
    const callback = typeof args[args.length - 1] === 'function' ? (args.pop() as (err: unknown, res?: unknown) => void) : undefined;
    if (callback) {
      // the pool's own query passes a callback: the same path as a promise, answered to the callback
      (this.query(...args) as Promise<unknown>).then(
        (res) => callback(null, res),
        (err) => callback(err),
      );
      return undefined as never;
    }
    const run = () => Reflect.apply(super.query, this, args) as Promise<unknown>;
    const ran = this.stalePlans.has(name) ? this.forget(name).then(run) : run();
    return ran.catch((err: unknown) => {
      if (!isStalePlan(err)) throw err;
      // Prepared before a migration changed its result's shape (a column added while this process ran: a rolling
      // upgrade migrates before the old version stops). PostgreSQL then refuses the statement on this connection for
      // good; forgotten and prepared again, it runs: at once outside a transaction, else (the transaction is aborted
      // now) at its next use on this connection.
      this.stalePlans.add(name);
      if ((this as unknown as { getTransactionStatus(): string | null }).getTransactionStatus() !== 'I') throw err;
      return this.forget(name).then(run);
    }) as never;
  }

  /** DEALLOCATEs a named statement and makes node-postgres parse it again. */
  private async forget(name: string): Promise<void> {
    await Reflect.apply(super.query, this, [`DEALLOCATE "${name.replace(/"/g, '""')}"`]);
    const connection = (this as unknown as { connection: { parsedStatements: Record<string, unknown> } }).connection;
    delete connection.parsedStatements[name];
    this.stalePlans.delete(name);
  }
}

/** The name of a query's named (prepared) statement; undefined for submittables and unnamed ones. */
function namedStatement(args: unknown[]): string | undefined {
  const [first] = args;
  if (first === null || typeof first !== 'object') return undefined;
  const config = first as { name?: unknown; submit?: unknown };
  return typeof config.name === 'string' && typeof config.submit !== 'function' ? config.name : undefined;
}

/** SQLSTATE 0A000 "cached plan must not change result type". */
const isStalePlan = (err: unknown): boolean =>
  (err as { code?: unknown } | undefined)?.code === '0A000' && /cached plan must not change result type/.test(String((err as Error).message));

export type Db = Pool;

/** SQLSTATE of a foreign-key violation: a row the statement links to was deleted meanwhile (or never existed). */
export const FOREIGN_KEY_VIOLATION = '23503';

/**
 * TCP keepalive on every pooled connection: one that has sent nothing for this long is probed (every second, ten
 * times: Node's own settings), so an idle connection whose peer is gone (a dropped NAT entry, a host that went away)
 * is closed within about 20 s instead of being handed to a request.
 */
const KEEPALIVE_IDLE_MS = 10_000;

/**
 * Creates the pool. Idle-client errors (a Postgres restart, a dropped connection) are logged, never thrown:
 * the pool replaces broken clients and the next query reconnects. A connection whose way to the server died while the
 * server answers others is found and closed (lib/db/deadConnections.ts).
 */
export function createPool(connectionString: string, logger: Logger, extra: Partial<PoolConfig> = {}): Pool {
  const pool: Pool = new Pool({
    connectionString,
    max: 10,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    Client: StorableTextClient,
    ...extra,
  });
  // a connection closed as dead is logged once, by the watch, not once per error it raises on its way out
  pool.on('error', (err, client) => {
    if (!isClosedAsDead(client)) logger.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'idle postgres client error');
  });
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      if (!isClosedAsDead(client)) logger.warn({ err: { message: err.message } }, 'postgres client error');
    });
  });
  watchForDeadConnections(pool, connectionString, logger);
  if (typeof extra.lock_timeout === 'number' && extra.lock_timeout > 0) (pool as unknown as Record<symbol, number>)[LOCK_TIMEOUT_OF] = extra.lock_timeout;
  return pool;
}

/** On a pool whose connections carry a lock_timeout (the API's): its value, for withTransaction's wait budget. */
const LOCK_TIMEOUT_OF = Symbol('armada.lockTimeoutMs');

/**
 * What a transaction on a pool with a lock_timeout (the API's) may wait in all, for a connection and for locks: twice
 * that lock_timeout. PostgreSQL times each lock acquisition on its own (a row: first its place in the queue of the
 * row's waiters, then the holder's transaction), and a request waits for a connection before that, so requests queued
 * on a row held by a stuck transaction waited up to 3.75 times the lock_timeout (18.8 s with 5 s: 60 PATCHes of one
 * row, the pool's 20 connections all waiting; session 50). Now the transaction waits for a connection at most the
 * budget, and the lock_timeout of its own transaction is cut to half of what is left when the wait took some of it
 * (docs/configuration.md#the-apis-database-limits).
 */
export const waitBudgetOf = (lockTimeoutMs: number): number => 2 * lockTimeoutMs;

/** A wait for a connection shorter than this leaves a transaction's lock_timeout as it is (beginWithin). */
const CUT_AFTER_MS = 100;

/**
 * A transaction's connection waited `waitedMs` of its budget: BEGIN with what is left for its lock waits. A wait under
 * CUT_AFTER_MS (a connection free at once, or a new one dialled) keeps the plain BEGIN and the connection's own limit.
 */
export function beginWithin(lockTimeoutMs: number, waitedMs: number): string {
  if (waitedMs < CUT_AFTER_MS) return 'BEGIN';
  const own = Math.floor((waitBudgetOf(lockTimeoutMs) - waitedMs) / 2);
  return own >= lockTimeoutMs ? 'BEGIN' : `BEGIN; SET LOCAL lock_timeout = '${Math.max(1, own)}ms'`;
}

/** The message of a transaction that got no connection within its wait budget. */
export const NO_CONNECTION_IN_TIME = 'no connection of the pool free within the wait budget';

/** A connection of `pool` within `ms`, else an error (isPostgresUnavailable); one that comes later goes back to the pool. */
function connectWithin(pool: Pool, ms: number): Promise<PoolClient> {
  return new Promise((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      reject(Object.assign(new Error(`${NO_CONNECTION_IN_TIME} (${ms} ms)`), { code: POOL_WAIT_EXCEEDED }));
    }, ms);
    pool.connect().then(
      (client) => {
        clearTimeout(timer);
        if (late) client.release();
        else resolve(client);
      },
      (err: unknown) => {
        clearTimeout(timer);
        if (!late) reject(err);
      },
    );
  });
}

/** The code of connectWithin's error (not a SQLSTATE: no five characters). */
const POOL_WAIT_EXCEEDED = 'ARMADA_POOL_WAIT';

/**
 * The pool options that give each of its connections PostgreSQL's `lock_timeout`, `statement_timeout` and
 * `idle_in_transaction_session_timeout` (sent with the connection's startup, so they hold from its first statement and
 * `RESET` comes back to them); 0 or absent leaves the server's own. For the API's pool (config.apiDatabaseLimits): a
 * request whose statement waits for a lock that a stuck transaction holds (an operator's open `BEGIN; SELECT … FOR
 * UPDATE`, a stopped process's row lock) then fails with 55P03, or one that runs away with 57014, and answers 503
 * (api/http/errorHandlers.ts) instead of hanging until the client gives up; and a transaction of its own left idle
 * (the process stopped or stalled mid-request) has its session ended by PostgreSQL, which releases its locks. The
 * worker's pool gets only the idle limit (config.workerDatabase): its activities wait for a lock as long as it is
 * held, as in an outage, rather than fail a run on a limit; migrations lift the limits for themselves
 * (lib/db/migrate.ts).
 */
export function sessionLimits(limits: { lockTimeoutMs?: number; statementTimeoutMs?: number; idleInTransactionTimeoutMs?: number }): Partial<PoolConfig> {
  const set = (ms: number | undefined) => ms !== undefined && ms > 0;
  return {
    ...(set(limits.lockTimeoutMs) ? { lock_timeout: limits.lockTimeoutMs } : {}),
    ...(set(limits.statementTimeoutMs) ? { statement_timeout: limits.statementTimeoutMs } : {}),
    ...(set(limits.idleInTransactionTimeoutMs) ? { idle_in_transaction_session_timeout: limits.idleInTransactionTimeoutMs } : {}),
  };
}

/**
 * The options of a workers' pool, one for `armada worker` and `armada start`'s workers alike (config.workerDatabase):
 * 20 connections; an activity waits up to connectTimeoutMs (default 60 s) for one, so a burst of activities (200
 * attempts starting at once) waits rather than fails (runAgent has one retry: 45 of 200 attempts failed after 10 s in
 * bench/concurrentAttempts.ts); and the idle-in-transaction limit (sessionLimits).
 */
export function workerPoolOptions(config: { workerDatabase: { connectTimeoutMs: number; idleInTransactionTimeoutMs: number } }): Partial<PoolConfig> {
  return {
    max: 20,
    connectionTimeoutMillis: config.workerDatabase.connectTimeoutMs,
    ...sessionLimits({ idleInTransactionTimeoutMs: config.workerDatabase.idleInTransactionTimeoutMs }),
  };
}

// ENOTFOUND / EAI_AGAIN: its host name does not resolve (now): a compose service's name while its container is
// stopped, or DNS down; EHOSTUNREACH / ENETUNREACH: no route to its host
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);

/**
 * The query failed because PostgreSQL could not be reached or went away (refused, reset, its host name not resolving,
 * no route to it, shutting down, starting up, a pool connect timeout): the API answers 503, not 500.
 */
export function isPostgresUnreachable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return true;
  return typeof e.message === 'string' && /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/.test(e.message);
}

/**
 * PostgreSQL refused for want of a resource: SQLSTATE class 53 (disk full 53100, out of memory 53200, too many
 * connections 53300, a configured limit 53400). Like an outage, it passes once the resource is back (space freed,
 * connections closed), so the API answers 503 and writers keep what they hold; before, a full disk was a 500 on
 * every write and an agent's log lines were dropped after three tries.
 */
export function isPostgresShortOfResources(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^53[0-9A-Z]{3}$/.test(code);
}

/**
 * PostgreSQL refused a write because it takes none now (SQLSTATE 25006): a standby (a failover under way, or a
 * DATABASE_URL that reaches a replica), or `default_transaction_read_only` turned on by an administrator. Armada never
 * opens a read-only transaction itself, so this is the server's state, which passes, not a fault of the request;
 * before, every write was a 500.
 */
export function isPostgresReadOnly(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === '25006';
}

/**
 * PostgreSQL ended the session for a limit of idleness: SQLSTATE 25P03 (`idle_in_transaction_session_timeout`: a
 * transaction waited that long for its next statement, the process stopped or stalled) or 57P05
 * (`idle_session_timeout`). The transaction was rolled back whole and the connection is gone; a new one works.
 */
export function isSessionEndedIdle(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === '25P03' || code === '57P05';
}

/**
 * PostgreSQL cannot take the request now and may later: unreachable, short of a resource, taking no writes, it ended
 * the request's idle session (the same request again runs on a new connection), or no connection of the API's pool
 * was free within a transaction's wait budget.
 */
export function isPostgresUnavailable(err: unknown): boolean {
  return isPostgresUnreachable(err) || isPostgresShortOfResources(err) || isPostgresReadOnly(err) || isSessionEndedIdle(err) || isPoolWaitExceeded(err);
}

/** A transaction of the API got no connection within its wait budget (withTransaction): every one is busy. */
const isPoolWaitExceeded = (err: unknown): boolean => (err as { code?: unknown } | undefined)?.code === POOL_WAIT_EXCEEDED;

/** What a client is told when PostgreSQL cannot take the request now (isPostgresUnavailable), saying what to do. */
export function postgresUnavailableMessage(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === '53100') return 'The database (PostgreSQL) is out of disk space: free space on its disk, then try again';
  if (code === '53200') return 'The database (PostgreSQL) is out of memory; try again';
  if (code === '53300') return 'The database (PostgreSQL) has no connection slot free (too many connections); try again';
  if (isPoolWaitExceeded(err)) return 'The database (PostgreSQL) had no connection free for the request in time: every connection of the API is busy, most likely waiting for a lock another transaction holds; nothing was written; try again';
  if (code === '25P03') return 'The database (PostgreSQL) ended the request\'s transaction: it waited for its next statement longer than its idle_in_transaction_session_timeout (this process stalled); nothing was written; try again';
  if (isPostgresReadOnly(err)) return 'The database (PostgreSQL) takes no writes now (it is read-only: a standby, or default_transaction_read_only is on); try again';
  if (isPostgresShortOfResources(err)) return `The database (PostgreSQL) is short of a resource (SQLSTATE ${String(code)}); try again`;
  return 'The database (PostgreSQL) is unavailable; try again';
}

/**
 * PostgreSQL refused the service's login or its database (SQLSTATE class 28: a wrong password or user, a pg_hba rule;
 * 3D000: no such database): the service's configuration, not the request, and it lasts until an operator fixes it. The
 * API answers 503 with this (was a bare 500 "Internal server error"); undefined for any other error. Workers and
 * migrations keep their own handling (they do not use this).
 */
export function postgresLoginRefusedMessage(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return undefined;
  if (code.startsWith('28')) return `The database (PostgreSQL) refused this service's login (SQLSTATE ${code}): its operator must correct the user or password of DATABASE_URL (or pg_hba.conf); try again once that is done`;
  if (code === '3D000') return "The database (PostgreSQL) has no database of the name DATABASE_URL gives: its operator must correct DATABASE_URL or create the database; try again once that is done";
  return undefined;
}

/**
 * What an operator is told when PostgreSQL refuses a new connection for want of a resource (isPostgresShortOfResources
 * at connect): what it is and what to do. Logged once and shown by /health (lib/runtime/dependencies.ts).
 */
export function postgresRefusingConnectionsReason(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === '53300') {
    return 'PostgreSQL refuses new connections: every connection slot is taken (max_connections reached, SQLSTATE 53300); requests that need a new connection answer 503 until one is free. End idle sessions (pg_stat_activity), lower the pool sizes of the processes that use it, or raise max_connections';
  }
  const message = ((err as Error | undefined)?.message ?? '').split('\n')[0];
  return `PostgreSQL refuses new connections for want of a resource (SQLSTATE ${String(code)}: ${message}); requests that need a new connection answer 503 until it is back`;
}

/**
 * Inside a transaction of its own (`withTransaction`), waits for the end of the transaction that holds `takeLock`'s
 * advisory lock: one that inserts a row and starts the workflow asking before it commits (a follow-up, a project's
 * clone, an approval). The wait is bounded (lock_timeout 20 s, under those activities' 30 s try): a session PostgreSQL
 * has not yet found dead (an API host cut off without a reset) fails the try with 55P03 and the activity tries again,
 * instead of each timed-out try leaving a worker connection waiting on the lock.
 */
export async function afterInsertingTransaction(c: Queryable, takeLock: (c: Queryable) => Promise<void>): Promise<void> {
  await c.query("SET LOCAL lock_timeout = '20s'");
  await takeLock(c);
}

/**
 * Runs fn inside BEGIN/COMMIT, rolling back on any error; the client is always released. When PostgreSQL ended the
 * session while fn was not running a statement (idle_in_transaction_session_timeout: this process stalled), the
 * statement after it fails only with node-postgres' "not queryable": the transaction fails with PostgreSQL's own
 * error instead (isSessionEndedIdle), which says what happened.
 */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const lockTimeoutMs = (pool as unknown as Record<symbol, number | undefined>)[LOCK_TIMEOUT_OF];
  const t0 = Date.now();
  const client = lockTimeoutMs ? await connectWithin(pool, waitBudgetOf(lockTimeoutMs)) : await pool.connect();
  let broken = false;
  let ended: unknown;
  const onError = (err: unknown) => {
    if (ended === undefined && isSessionEndedIdle(err)) ended = err;
  };
  client.on('error', onError);
  try {
    await client.query(lockTimeoutMs ? beginWithin(lockTimeoutMs, Date.now() - t0) : 'BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    throw ended !== undefined && isPostgresUnreachable(err) ? ended : err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<Pool, 'query'> | PoolClient;
