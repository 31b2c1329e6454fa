/**
 * A pooled connection whose way to PostgreSQL died while the server stays healthy (a NAT or firewall that dropped it,
 * a proxy that stopped forwarding it) is found and closed, so that a statement sent on it fails (SQLSTATE class 08: a
 * request answers 503) instead of waiting for good. The dependency probes cannot see it: they dial afresh and the
 * server answers them, so nothing calls PostgreSQL down and nothing releases the request (lib/db/releasedWhenDown.ts).
 *
 * No statement has a deadline (long ones are legitimate), so silence alone decides nothing. A connection that owes an
 * answer (it wrote to the server after the server's last ReadyForQuery) and has had no byte either way for QUIET_MS is
 * looked up in pg_stat_activity, on a connection of its own. Its backend waiting for its next command ('idle', 'idle
 * in transaction') for IDLE_ON_SERVER_MS by the server's clock, or blocked writing to us (ClientWrite), while we wait
 * for it, on two looks CONFIRM_AFTER_MS apart, means that the way between is dead (found about 2 s after the
 * statement was sent). Its socket is destroyed (the statement fails with `DeadConnection`) and its backend
 * terminated, so a transaction it held is rolled back and its locks freed now, not when the server's own keepalive
 * notices; the pool's idle connections that have heard nothing since are closed too, since what dropped one has
 * likely dropped those opened with it, and a request must not be handed one of them.
 * A backend that runs the statement ('active', waiting on a lock included) is slow, not dead, and is left alone. One
 * the server does not know (a pooler such as PgBouncer gives process ids of its own) is left to TCP, as are idle
 * connections nothing has found dead: keepalive (lib/db/pool.ts) closes one whose peer no longer answers.
 */
import type { Socket } from 'node:net';
import { Client, type Pool, type PoolClient } from 'pg';
import type { Logger } from '../logger';
import { closeAtOnce, socketOf } from './closeAtOnce';

/**
 * How long a connection that owes an answer may go without a byte before its backend is looked up. Short: a look
 * only reads pg_stat_activity, and a statement the server runs (however slow) is left alone whatever it finds; what
 * protects a live connection is the server's word (its backend waits for us) on two looks, not our patience. (It was
 * 5 s, and with IDLE_ON_SERVER_MS 2 s and looks a second apart a request, or /health, waited 6–8 s for its 503.)
 */
const QUIET_MS = 1000;
/** How long its backend must have been waiting for a command, by the server's clock: an answer is not on its way. */
const IDLE_ON_SERVER_MS = 1000;
const TICK_MS = 250;
/**
 * The second look that confirms a suspect comes at least this long after the first, with no byte between: a server
 * that was frozen with the statement in its socket can answer a look just before that backend reads it, and after
 * this long it has read it. An answer lost on the way is then 1.5 s overdue: TCP resends a lost segment after 0.2 s,
 * and again 0.6 s after it was first sent.
 */
const CONFIRM_AFTER_MS = 500;
/** A look-up (or the termination) that gets no answer in this time decides nothing; its connection is closed. */
const LOOK_TIMEOUT_MS = 3000;
/** How the look-up connection shows in pg_stat_activity. */
export const POOL_CHECK_APPLICATION_NAME = 'armada-pool-check';

/** A statement's connection was closed because its way to the server was found dead (SQLSTATE 08006). */
export class DeadConnection extends Error {
  readonly code = '08006';
  constructor(message: string) {
    super(message);
    this.name = 'DeadConnection';
  }
}

const closedAsDead = new WeakSet<object>();

/** True for a client this module closed (its errors are expected, and logged once by the watch). */
export function isClosedAsDead(client: object): boolean {
  return closedAsDead.has(client);
}

interface Watched {
  socket: Socket;
  /** Something was written after the server's last ReadyForQuery (or PortalSuspended, CopyInResponse). */
  owed: boolean;
  /** performance.now() of the last byte either way. */
  lastByteAt: number;
  checkedOut: boolean;
  /** When a look found its backend waiting for us (a first strike); a second, with no byte between, closes it. */
  suspectedAt?: number;
}

interface BackendState {
  pid: number;
  state: string | null;
  wait_event: string | null;
  still_ms: number | null;
}

const WAITING_FOR_COMMAND = new Set(['idle', 'idle in transaction', 'idle in transaction (aborted)']);

/** The backend waits for us while we wait for it: the way between is dead. */
function waitsForUs(b: BackendState | undefined): boolean {
  if (!b) return false; // unknown to the server: a pooler's process id, or gone (keepalive's case)
  if (b.state === 'active') return b.wait_event === 'ClientWrite';
  return b.state !== null && WAITING_FOR_COMMAND.has(b.state) && (b.still_ms ?? 0) >= IDLE_ON_SERVER_MS;
}

const processIdOf = (client: object): number | undefined => (client as { processID?: number | null }).processID ?? undefined;

/** Follows what a connected client writes and reads: whether it waits for the server, and since when. */
function follow(client: PoolClient): Watched | undefined {
  const socket = socketOf(client);
  if (!socket) return undefined;
  const w: Watched = { socket, owed: false, lastByteAt: performance.now(), checkedOut: true };
  const write = socket.write;
  socket.write = function (this: Socket, ...args: unknown[]) {
    w.owed = true;
    w.lastByteAt = performance.now();
    return Reflect.apply(write, this, args) as boolean;
  } as Socket['write'];
  socket.on('data', () => {
    w.lastByteAt = performance.now();
  });
  const answered = () => {
    w.owed = false;
  };
  const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
  connection.on('readyForQuery', answered); // the server waits for the next command
  connection.on('portalSuspended', answered); // a cursor's rows so far: the server waits for us to ask for more
  connection.on('copyInResponse', answered); // COPY FROM STDIN: the server waits for our rows
  return w;
}

interface Lookups {
  /** `sql`'s rows, or undefined when the server does not answer it in time (frozen, say): its connection is closed. */
  run<T>(sql: string, values: unknown[]): Promise<T[] | undefined>;
  close(): void;
}

/** The look-up connection: one at a time, opened when needed, never left waiting past LOOK_TIMEOUT_MS. */
function lookups(connectionString: string): Lookups {
  let client: Client | undefined;
  const close = () => {
    const c = client;
    client = undefined;
    if (c) closeAtOnce(c);
  };
  const inTime = <T>(p: Promise<T>): Promise<T> => {
    let late: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => (late = setTimeout(() => reject(new Error('no answer in time')), LOOK_TIMEOUT_MS)));
    return Promise.race([p, timedOut]).finally(() => clearTimeout(late));
  };
  return {
    async run<T>(sql: string, values: unknown[]) {
      try {
        if (!client) {
          const c = new Client({ connectionString, application_name: POOL_CHECK_APPLICATION_NAME, keepAlive: true });
          c.on('error', () => undefined); // its statement fails, which is what counts
          client = c;
          await inTime(c.connect());
        }
        return (await inTime(client.query(sql, values))).rows as T[];
      } catch {
        close();
        return undefined;
      }
    },
    close,
  };
}

const BACKENDS =
  'SELECT pid, state, wait_event, (EXTRACT(EPOCH FROM clock_timestamp() - state_change) * 1000)::float8 AS still_ms FROM pg_stat_activity WHERE pid = ANY($1::int[])';
const DEAD_MESSAGE = 'The connection to PostgreSQL stopped answering while the server answers others (a dropped connection); it was closed';

/** Watches `pool`'s connections for the rest of its life (lib/db/pool.ts createPool does, for every pool). */
export function watchForDeadConnections(pool: Pool, connectionString: string, logger: Logger): void {
  const watched = new Map<PoolClient, Watched>();
  const server = lookups(connectionString);
  let timer: NodeJS.Timeout | undefined;
  let looking = false;

  /** Closes `client` as dead: its statement fails now, and the pool drops it. */
  const close = (client: PoolClient, w: Watched, message: string) => {
    closedAsDead.add(client);
    w.socket.destroy(new DeadConnection(message));
  };
  /** Closes the idle connections that have heard nothing since `cutoff`: what dropped one may have dropped them. */
  const closeIdleSince = (cutoff: number): number => {
    let closed = 0;
    for (const [client, w] of watched) {
      if (w.checkedOut || closedAsDead.has(client) || w.lastByteAt > cutoff) continue;
      close(client, w, 'closed with a pooled connection found dead');
      closed++;
    }
    return closed;
  };

  const look = async () => {
    const startedAt = performance.now();
    const suspects = [...watched].filter(([client, w]) => w.owed && startedAt - w.lastByteAt >= QUIET_MS && processIdOf(client) !== undefined);
    if (suspects.length === 0) return server.close();
    const backends = await server.run<BackendState>(BACKENDS, [suspects.map(([client]) => processIdOf(client))]);
    if (!backends) return; // the server does not answer here either: an outage, which the probes call
    const byPid = new Map(backends.map((b) => [b.pid, b]));
    const dead: [PoolClient, Watched][] = [];
    for (const [client, w] of suspects) {
      // still silent since the look began (an answer read meanwhile, after a stall of this process, clears it)
      if (!(watched.has(client) && w.owed && w.lastByteAt < startedAt && waitsForUs(byPid.get(processIdOf(client) ?? -1)))) {
        w.suspectedAt = undefined;
        continue;
      }
      // Two looks CONFIRM_AFTER_MS apart, with no byte between: a server that was frozen with the statement in its
      // socket can answer the look just before that backend reads it, looking idle for one look
      if (w.suspectedAt === undefined || w.lastByteAt >= w.suspectedAt) w.suspectedAt = startedAt;
      else if (startedAt - w.suspectedAt >= CONFIRM_AFTER_MS) dead.push([client, w]);
    }
    if (dead.length === 0) return;
    for (const [client, w] of dead) close(client, w, DEAD_MESSAGE);
    const idleClosed = closeIdleSince(Math.max(...dead.map(([, w]) => w.lastByteAt)));
    const pids = dead.map(([client]) => processIdOf(client));
    logger.warn({ dead: dead.length, idleClosed, backends: pids }, 'pooled postgres connections stopped answering while the server answers others (dropped on the way); closed them');
    // their backends wait for a command that never comes: ended now, rolling back what they held
    await server.run('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
  };

  const stop = () => {
    clearTimeout(timer);
    timer = undefined;
    server.close();
  };
  const schedule = () => {
    if (timer || looking || watched.size === 0 || (pool as unknown as { ending?: boolean }).ending) return;
    timer = setTimeout(() => {
      timer = undefined;
      looking = true;
      look()
        .catch((err: unknown) => logger.warn({ err: { message: (err as Error).message } }, 'pooled postgres connections: look-up failed'))
        .finally(() => {
          looking = false;
          if (watched.size === 0) server.close(); // the pool ended meanwhile
          schedule();
        });
    }, TICK_MS);
    timer.unref();
  };

  pool.on('connect', (client: PoolClient) => {
    const w = follow(client);
    if (!w) return;
    watched.set(client, w);
    schedule();
  });
  pool.on('acquire', (client: PoolClient) => {
    const w = watched.get(client);
    if (w) w.checkedOut = true;
  });
  pool.on('release', (_err: Error | undefined, client: PoolClient) => {
    const w = watched.get(client);
    if (w) w.checkedOut = false;
  });
  pool.on('remove', (client: PoolClient) => {
    watched.delete(client);
    if (watched.size === 0) stop();
  });
}
