/**
 * An HTTP request waiting on PostgreSQL is released with a 503 the moment PostgreSQL is called down
 * (lib/runtime/dependencies.ts), instead of hanging until a frozen server (SIGSTOP, a partition) answers again or the
 * pool's 10 s connect timeout. The probes decide; no query gets a deadline of its own, so one slow query on a loaded
 * host is never an outage.
 *
 * Only requests are released (api/http/dependencyGate.ts runs each in a `DatabaseRequest`), and only while they have
 * no answer: background work, the worker's activities (on a pool of their own, also in `armada start`) and what a request
 * left running after its answer wait for the server as before. What a released request had sent is dealt with so
 * that its answer is true:
 * - waiting for a connection: nothing was sent; the connection, when it comes, goes back to the pool;
 * - a statement in a transaction before its COMMIT: the connection is closed instead of going back to the pool, so the
 *   server, once it runs again, ends the session and rolls the transaction back (nothing written: "try again");
 * - a statement outside a transaction (other than a SELECT), or the COMMIT, in a request that may write (not
 *   GET/HEAD/OPTIONS): the server may still apply it when it runs again, so the answer says the outcome is unknown,
 *   never "try again".
 * The same holds for a statement whose connection is closed because its way to the server died while the server
 * answers others (lib/db/deadConnections.ts): it fails with a 503 of its own, which says that the outcome is unknown
 * when it may have applied. And for a COMMIT whose session the server ended under it (a restart or crash of
 * PostgreSQL, pg_terminate_backend): it may have committed first, so its 503 says the outcome is unknown too (before
 * session 49 it said "try again"; test/integration/followUpCommitFaults.test.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient } from 'pg';
import { AppError } from '../errors';
import type { DependencyState } from '../runtime/dependencies';
import { DeadConnection } from './deadConnections';
import { isPostgresUnreachable } from './pool';

export interface DatabaseRequest {
  /** True once the request has its answer, or its response has begun (a stream, a WebSocket): not released then. */
  answered(): boolean;
  /** GET, HEAD or OPTIONS: a statement in flight only reads. */
  readOnly: boolean;
  /** A statement that may apply on its own was in flight when the request was released. */
  outcomeUnknown?: boolean;
}

export const POSTGRES_NOT_ANSWERING = 'The database (PostgreSQL) is not answering; try again';
export const POSTGRES_OUTCOME_UNKNOWN =
  'The database (PostgreSQL) stopped answering while this change was being written: it may or may not have been applied; check before sending it again';

const requests = new AsyncLocalStorage<DatabaseRequest>();

/** Runs `fn` (and everything it starts) as part of `request`. */
export function runInDatabaseRequest<T>(request: DatabaseRequest, fn: () => T): T {
  return requests.run(request, fn);
}

/** The request the caller is part of, while it waits for its answer. */
function waitingRequest(): DatabaseRequest | undefined {
  const r = requests.getStore();
  return r && !r.answered() ? r : undefined;
}

function unavailable(request: DatabaseRequest): AppError {
  return request.outcomeUnknown
    ? new AppError(503, 'SERVICE_UNAVAILABLE', POSTGRES_OUTCOME_UNKNOWN, { outcome: 'unknown' })
    : new AppError(503, 'SERVICE_UNAVAILABLE', POSTGRES_NOT_ANSWERING);
}

/** `pending`, or the request's 503 once PostgreSQL is called down first (`abandon` then deals with `pending`). */
function untilDown<T>(dependencies: DependencyState, request: DatabaseRequest, pending: Promise<T>, abandon: () => void): Promise<T> {
  return settledOrDown(dependencies, pending, () => {
    abandon();
    return unavailable(request);
  });
}

/**
 * `pending`, or the error `whenDown` gives the moment PostgreSQL is called down first (`pending`'s own outcome is then
 * left unread). Also for requests that wait on the worker's PostgreSQL work (api/http/workerWait.ts).
 */
export function settledOrDown<T>(dependencies: DependencyState, pending: Promise<T>, whenDown: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const off = dependencies.onceDown('postgres', () => reject(whenDown()));
    pending.then(
      (value) => {
        off();
        resolve(value);
      },
      (err: unknown) => {
        off();
        reject(err);
      },
    );
  });
}

/** node-postgres' promise form: (text | config, values?), no callback, no submittable (a cursor, a stream). */
function promiseQuery(args: unknown[]): boolean {
  const [first] = args;
  if (typeof args[args.length - 1] === 'function') return false;
  return typeof first === 'string' || (first !== null && typeof first === 'object' && typeof (first as { submit?: unknown }).submit !== 'function');
}

function queryText(args: unknown[]): string {
  const [first] = args;
  return typeof first === 'string' ? first : String((first as { text?: unknown }).text ?? '');
}

const BEGINS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const ENDS = /^\s*(COMMIT|END|ROLLBACK|ABORT)\b/i;
const COMMITS = /^\s*(COMMIT|END)\b/i;
const READS = /^\s*SELECT\b/i;

/**
 * The session ended under a statement already sent: the server went away or ended it (not a connection that was
 * broken before the statement, which pg refuses to send: "Client has encountered a connection error").
 */
function lostWithStatementSent(err: unknown): boolean {
  const message = (err as { message?: unknown } | undefined)?.message;
  return isPostgresUnreachable(err) && !(typeof message === 'string' && message.startsWith('Client has encountered a connection error'));
}

/** A pooled client whose statements, within a waiting request, are released when PostgreSQL is called down. */
function releasableClient(client: PoolClient, dependencies: DependencyState): PoolClient {
  let inTransaction = false;
  let abandoned = false; // a statement was left with the server: the session must end, never serve another request
  const query = (...args: unknown[]): unknown => {
    const request = waitingRequest();
    const run = (): unknown => Reflect.apply(client.query, client, args);
    if (!request || !promiseQuery(args)) return run();
    if (dependencies.isDown('postgres')) return Promise.reject(unavailable(request));
    const text = queryText(args);
    const begins = BEGINS.test(text);
    const ends = ENDS.test(text);
    // a statement of its own applies by itself, and a COMMIT applies its transaction; a BEGIN, a ROLLBACK or a SELECT
    // applies nothing (no SELECT of ours calls a function that writes), and neither does a statement inside a
    // transaction whose COMMIT was not sent
    const mayApply = COMMITS.test(text) || (!inTransaction && !begins && !ends && !READS.test(text));
    if (begins) inTransaction = true;
    else if (ends) inTransaction = false;
    const commits = COMMITS.test(text);
    const pending = (run() as Promise<unknown>).catch((err: unknown) => {
      // its connection was found dead with the statement sent (lib/db/deadConnections.ts): the server may have run it;
      // so may a server whose session ended (a restart, a crash, pg_terminate_backend) with the COMMIT sent: it can
      // have committed before it went (a "try again" there ran a follow-up's prompt twice)
      if ((err instanceof DeadConnection || (commits && lostWithStatementSent(err))) && mayApply && !request.readOnly) {
        request.outcomeUnknown = true;
        throw unavailable(request);
      }
      throw err;
    });
    return untilDown(dependencies, request, pending, () => {
      abandoned = true;
      pending.catch(() => undefined);
      if (mayApply && !request.readOnly) request.outcomeUnknown = true;
    });
  };
  const release = (err?: Error | boolean) => client.release(abandoned || err);
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'query') return query;
      if (prop === 'release') return release;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The pool the HTTP services use: `query` and `connect` of a waiting request are released with a 503 when PostgreSQL
 * is called down (or fail at once while it is down); everything else is the pool itself.
 */
export function releasedWhenDown(pool: Pool, dependencies: DependencyState): Pool {
  const connect = (request: DatabaseRequest): Promise<PoolClient> => {
    if (dependencies.isDown('postgres')) return Promise.reject(unavailable(request));
    const pending = pool.connect();
    return untilDown(dependencies, request, pending, () => {
      pending.then(
        (client) => client.release(),
        () => undefined,
      );
    }).then((client) => releasableClient(client, dependencies));
  };
  // the pool's own query (a connection for one statement) as that: released while it waits for either
  const query = async (request: DatabaseRequest, args: unknown[]): Promise<unknown> => {
    const client = await connect(request);
    try {
      const result = await (Reflect.apply(client.query, client, args) as Promise<unknown>);
      client.release();
      return result;
    } catch (err) {
      client.release(err as Error); // as the pool's query does: a client whose statement failed is not reused
      throw err;
    }
  };
  const own: Record<string, unknown> = {
    connect: (...args: unknown[]) => {
      const request = waitingRequest();
      return request && args.length === 0 ? connect(request) : Reflect.apply(pool.connect, pool, args);
    },
    query: (...args: unknown[]) => {
      const request = waitingRequest();
      return request && promiseQuery(args) ? query(request, args) : Reflect.apply(pool.query, pool, args);
    },
  };
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'connect' || prop === 'query') return own[prop];
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
