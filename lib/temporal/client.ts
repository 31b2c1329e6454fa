/** The Temporal client of a process, connected lazily so an API can start (and answer /health) before Temporal is up. */
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { AppError } from '../errors';

export interface TemporalHandle {
  /** Connects on first use; later calls share the connection. Throws a 503 AppError while Temporal is known down. */
  client(): Promise<Client>;
  close(): Promise<void>;
}

/**
 * gRPC reconnects within about 2 s of the server coming back (the default backoff grows to 2 minutes, which left the
 * API failing long after a restarted dev server was up again).
 */
export const TEMPORAL_CHANNEL_ARGS = { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2000 };

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

export const temporalUnavailable = (detail?: string): AppError =>
  new AppError(503, 'SERVICE_UNAVAILABLE', `The workflow engine (Temporal) is unavailable; try again${detail ? ` (${detail.slice(0, 200)})` : ''}`);

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/** A Temporal call failed because the server could not be reached (connect failure, UNAVAILABLE, deadline). */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown; name?: string; message?: string } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === GRPC_UNAVAILABLE || e.code === GRPC_DEADLINE_EXCEEDED) return true;
    if (e.name === 'TransportError' || /Failed to connect before the deadline/.test(e.message ?? '')) return true;
  }
  return false;
}

export interface TemporalHandleOptions {
  /** True while Temporal is known down (lib/runtime/dependencies.ts): client() then fails at once. */
  isDown?: () => boolean;
  connectTimeoutMs?: number;
}

export function createTemporalHandle(address: string, namespace: string, opts: TemporalHandleOptions = {}): TemporalHandle {
  let pending: Promise<{ connection: Connection; client: Client }> | undefined;
  let closing = false;
  const retries = closableRetries(() => closing);
  const connect = async (): Promise<{ connection: Connection; client: Client }> => {
    const connection = await Connection.connect({
      address,
      connectTimeout: opts.connectTimeoutMs ?? 3000,
      channelArgs: TEMPORAL_CHANNEL_ARGS,
      interceptors: [retries.interceptor],
    });
    return { connection, client: new Client({ connection, namespace }) };
  };
  return {
    async client() {
      if (opts.isDown?.()) throw temporalUnavailable();
      if (!pending) {
        pending = connect();
        pending.catch(() => {
          pending = undefined; // retry the connection on the next call
        });
      }
      try {
        return (await pending).client;
      } catch (err) {
        throw isTemporalUnreachable(err) ? temporalUnavailable((err as Error).message) : err;
      }
    },
    async close() {
      if (!pending) return;
      const closed = pending;
      pending = undefined;
      closing = true; // no new retry from now on
      // a retry decided before this fires on the open channel, fails, and its call ends (at most ~0.6 s)
      const wait = retries.retryDue() - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait + 50));
      try {
        (await closed).connection.close();
      } catch {
        /* never connected */
      }
    },
  };
}
