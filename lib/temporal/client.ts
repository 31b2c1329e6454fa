/** The Temporal client of a process, connected lazily so an API can start (and answer /health) before Temporal is up. */
import { InterceptingCall, ListenerBuilder, RequesterBuilder, status as grpcStatus, type Interceptor } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, isGrpcServiceError, makeGrpcRetryInterceptor, type ConnectionOptions } from '@temporalio/client';
import { AppError } from '../errors';

export interface TemporalHandle {
  /** Connects on first use; later calls share the connection. Throws a 503 AppError while Temporal is known down. */
  client(): Promise<Client>;
  /**
   * Gives up the current connection (Temporal was found down): calls still waiting for it to connect, and calls
   * already sent on it and not answered, fail at once (UNAVAILABLE), and the next client() opens a fresh one. A connection whose TCP peer takes bytes and never answers (a hung host,
   * a partition) is otherwise never replaced: grpc-js has no connect timeout, and keepalive only runs on a connection
   * that completed its HTTP/2 handshake.
   */
  reconnect(): void;
  close(): Promise<void>;
}

/**
 * gRPC reconnects within about 2 s of the server coming back (the default backoff grows to 2 minutes, which left the
 * API failing long after a restarted dev server was up again).
 *
 * Keepalive (written out; the SDK's defaults are 30 s and 15 s): an established connection that goes silent is closed
 * within about 25 s and the next call dials again. Temporal's frontend refuses pings more often than every 10 s
 * (`frontend.keepAliveMinTime`, also in the CLI's dev server; it permits pings without calls) with GOAWAY
 * too_many_pings, so 15 s keeps a margin above it.
 *
 * A local subchannel pool: grpc-js otherwise shares one subchannel (one TCP connection) between all channels with the
 * same target and options, so the dependency probe and the API's client used the same socket, and a fresh Connection
 * after an outage got the old, hung one back.
 */
export const TEMPORAL_CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 250,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.keepalive_time_ms': 15_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.use_local_subchannel_pool': 1,
};

/** How long a call may retry UNAVAILABLE before the API answers 503 (four tries, about 1 s), instead of 10 tries. */
const API_RETRY_ATTEMPTS = 4;

/**
 * The SDK's retry interceptor, made safe to close: once `closed()` no call is retried, and `retryDue()` says when the
 * last retry decided before that fires. The SDK starts a retry from a timer; a timer that fired after the connection
 * closed started its call on the shut channel and threw "Channel has been shut down" from the timer (an uncaught
 * exception: exit 70 at Ctrl-C during an outage), and that call never ended.
 */
function closableRetries(closed: () => boolean) {
  const options = defaultGrpcRetryOptions({ maxAttempts: API_RETRY_ATTEMPTS });
  let due = 0;
  const interceptor = makeGrpcRetryInterceptor({
    retryableDecider: (attempt, status) => !closed() && options.retryableDecider(attempt, status),
    delayFunction: (attempt, status) => {
      const ms = options.delayFunction(attempt, status);
      due = Math.max(due, Date.now() + ms);
      return ms;
    },
  });
  return { interceptor, retryDue: () => due };
}

/**
 * The calls of one connection that have not ended, each try of the retry interceptor apart, so they can be ended at
 * once when Temporal is found down. A call sent on a connection that went silent (a frozen server, a partition after
 * the handshake) otherwise waits for its deadline (a start's 20 s) or for keepalive to give up the connection (~25 s),
 * long after the probes called Temporal down (about 6 s, docs/operations.md).
 */
function callsInFlight() {
  const calls = new Set<InterceptingCall>();
  const interceptor: Interceptor = (options, nextCall) => {
    const call: InterceptingCall = new InterceptingCall(
      nextCall(options),
      new RequesterBuilder()
        .withStart((metadata, _listener, next) => {
          next(
            metadata,
            new ListenerBuilder()
              .withOnReceiveStatus((status, nextStatus) => {
                calls.delete(call);
                nextStatus(status);
              })
              .build(),
          );
        })
        .build(),
    );
    calls.add(call);
    return call;
  };
  return {
    interceptor,
    /** Ends every call still waiting on this connection with UNAVAILABLE (the API answers them 503). */
    endAll(details: string) {
      const ending = [...calls];
      calls.clear();
      for (const c of ending) c.cancelWithStatus(grpcStatus.UNAVAILABLE, details);
    },
  };
}

export const temporalUnavailable = (detail?: string): AppError =>
  new AppError(503, 'SERVICE_UNAVAILABLE', `The workflow engine (Temporal) is unavailable; try again${detail ? ` (${detail.slice(0, 200)})` : ''}`);

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/** A Temporal call failed on its deadline (gRPC DEADLINE_EXCEEDED, in the error or its causes). */
export function isTemporalDeadlineExceeded(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === GRPC_DEADLINE_EXCEEDED) return true;
  }
  return false;
}

/** A Temporal call failed because the server could not be reached (connect failure, UNAVAILABLE, deadline). */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown; name?: string; message?: string } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === GRPC_UNAVAILABLE || e.code === GRPC_DEADLINE_EXCEEDED) return true;
    if (e.name === 'TransportError' || /Failed to connect before the deadline/.test(e.message ?? '')) return true;
  }
  return false;
}

export type TemporalRefusal = 'overloaded' | 'failed';

/** Retry-After (seconds) of a call Temporal refused for a rate or resource limit: the SDK's retries already waited ~5 s. */
export const TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS = 2;

/** What a request Temporal refused for a rate or resource limit is told (the task service's 503 message). */
export const TEMPORAL_OVERLOADED_MESSAGE = 'The workflow engine (Temporal) is overloaded: it refused the call for a rate or resource limit; try again in a few seconds';

/**
 * A Temporal call the server refused or failed on its side, as opposed to one it could not be reached for
 * (isTemporalUnreachable) or one that was wrong (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS: the caller's to map):
 *  - `overloaded`: RESOURCE_EXHAUSTED, a rate or resource limit of the server (a namespace's RPS limit, a workflow's
 *    in-flight update limit) that the SDK's own retries (API_RETRY_ATTEMPTS) did not get past;
 *  - `failed`: UNKNOWN, ABORTED, INTERNAL or DATA_LOSS, a failure inside the server (its persistence erring).
 * Both pass: the request may be sent again (a 503, api/http/errorHandlers.ts), where they used to answer 500. Only
 * gRPC status errors count (the SDK's isGrpcServiceError), in the error or its causes.
 */
export function temporalRefusal(err: unknown): TemporalRefusal | undefined {
  for (let e = err as { cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (!isGrpcServiceError(e)) continue;
    if (e.code === grpcStatus.RESOURCE_EXHAUSTED) return 'overloaded';
    if (e.code === grpcStatus.UNKNOWN || e.code === grpcStatus.ABORTED || e.code === grpcStatus.INTERNAL || e.code === grpcStatus.DATA_LOSS) return 'failed';
    return undefined;
  }
  return undefined;
}

export interface TemporalHandleOptions {
  /** True while Temporal is known down (lib/runtime/dependencies.ts): client() then fails at once. */
  isDown?: () => boolean;
  connectTimeoutMs?: number;
}

/**
 * Connection.connect, but a connection that did not get through is closed (the SDK leaves it open, and with a local
 * subchannel pool each one would keep its own hung socket).
 */
export async function connectOrClose(options: ConnectionOptions): Promise<Connection> {
  const connection = Connection.lazy(options);
  try {
    await connection.ensureConnected();
    return connection;
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw err;
  }
}

interface OpenConnection {
  connection: Connection;
  client: Client;
  /** stops retries on this connection (set before it is closed) */
  closing: boolean;
  retryDue(): number;
  /** ends the calls waiting on this connection (callsInFlight) */
  endCalls(details: string): void;
}

/** Closes a connection once the retries it had already scheduled have fired (at most ~0.6 s), so none starts on it closed. */
async function retire(pending: Promise<OpenConnection>): Promise<void> {
  let open: OpenConnection;
  try {
    open = await pending;
  } catch {
    return; // never connected
  }
  open.closing = true; // no new retry from now on
  // a retry decided before this fires on the open channel, fails, and its call ends (at most ~0.6 s)
  const wait = open.retryDue() - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait + 50));
  await open.connection.close().catch(() => undefined);
}

export function createTemporalHandle(address: string, namespace: string, opts: TemporalHandleOptions = {}): TemporalHandle {
  let pending: Promise<OpenConnection> | undefined;
  /** the connection of `pending`, known before it has connected */
  let current: OpenConnection | undefined;
  const retiring = new Set<Promise<void>>();
  const connect = async (): Promise<OpenConnection> => {
    const open = { closing: false } as OpenConnection;
    current = open;
    const retries = closableRetries(() => open.closing);
    const inFlight = callsInFlight();
    open.retryDue = retries.retryDue;
    open.endCalls = inFlight.endAll;
    open.connection = await connectOrClose({
      address,
      connectTimeout: opts.connectTimeoutMs ?? 3000,
      channelArgs: TEMPORAL_CHANNEL_ARGS,
      // each try of a call is one in flight: the retries' interceptor first, so it wraps them
      interceptors: [retries.interceptor, inFlight.interceptor],
    });
    open.client = new Client({ connection: open.connection, namespace });
    return open;
  };
  const drop = () => {
    if (!pending) return;
    // no retry of them, and the calls sent on it and not answered end now, with the 503 of an unreachable Temporal
    if (current) {
      current.closing = true;
      current.endCalls('Temporal was found unavailable while this call waited for its answer');
      current = undefined;
    }
    const r = retire(pending);
    pending = undefined;
    retiring.add(r);
    void r.finally(() => retiring.delete(r));
  };
  return {
    async client() {
      if (opts.isDown?.()) throw temporalUnavailable();
      if (!pending) {
        const p = connect();
        pending = p;
        p.catch(() => {
          if (pending === p) pending = undefined; // retry the connection on the next call
        });
      }
      try {
        return (await pending).client;
      } catch (err) {
        throw isTemporalUnreachable(err) ? temporalUnavailable((err as Error).message) : err;
      }
    },
    reconnect: drop,
    async close() {
      drop();
      await Promise.all([...retiring]);
    },
  };
}
