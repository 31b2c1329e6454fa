/**
 * Which of the process's dependencies (PostgreSQL, Temporal) are down right now, as the API sees them: set by cheap
 * periodic probes on their own connections and, in `armada start`, at once by the supervisor when a server it owns
 * exits. GET /health reports it, and calls that need a down dependency answer 503 at once instead of hanging.
 */
import { Connection } from '@temporalio/client';
import { Client, type Pool } from 'pg';
import type { Logger } from '../logger';
import { TEMPORAL_CHANNEL_ARGS } from '../temporal/client';

export type DependencyName = 'postgres' | 'temporal';
const NAMES: readonly DependencyName[] = ['postgres', 'temporal'];

export interface DependencyState {
  /** The dependencies known to be down, in a stable order (empty when all are up). */
  down(): DependencyName[];
  isDown(name: DependencyName): boolean;
  /**
   * `observedAt`: when the failing observation began (a probe's start). A failure that began before the latest sign of
   * life (markUp) is stale, e.g. a probe that dialled while the restarted server was still coming up, and is ignored.
   */
  markDown(name: DependencyName, reason: string, observedAt?: number): void;
  markUp(name: DependencyName): void;
  /** Calls `listener` each time a dependency goes from up to down. */
  onDown(listener: (name: DependencyName) => void): void;
}

export function createDependencyState(logger: Logger): DependencyState {
  const downSince = new Map<DependencyName, number>();
  const lastUp = new Map<DependencyName, number>();
  const downListeners: ((name: DependencyName) => void)[] = [];
  return {
    down: () => NAMES.filter((n) => downSince.has(n)),
    isDown: (name) => downSince.has(name),
    markDown(name, reason, observedAt) {
      if (downSince.has(name)) return;
      if (observedAt !== undefined && (lastUp.get(name) ?? -1) >= observedAt) return;
      downSince.set(name, Date.now());
      logger.warn({ dependency: name, reason }, `${name} is unavailable; requests that need it answer 503 until it is back`);
      for (const listener of downListeners) listener(name);
    },
    markUp(name) {
      lastUp.set(name, Date.now());
      const since = downSince.get(name);
      if (since === undefined) return;
      downSince.delete(name);
      logger.info({ dependency: name, downMs: Date.now() - since }, `${name} is back`);
    },
    onDown(listener) {
      downListeners.push(listener);
    },
  };
}

export interface ProbeOptions {
  /** Unset: PostgreSQL is not probed. */
  databaseUrl?: string;
  /** Unset: Temporal is not probed. */
  temporalAddress?: string;
  namespace: string;
  intervalMs?: number;
  timeoutMs?: number;
  /** Probes in a row that got no answer in time before a dependency counts as down (default 3). */
  slowProbesToDown?: number;
}

export interface DependencyProbes {
  /** Stops probing (before a shutdown stops the servers, so their stop is not reported as an outage). */
  stop(): Promise<void>;
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SlowProbe(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const firstLine = (err: unknown) => ((err as Error)?.message ?? String(err)).split('\n')[0];

/** A probe that got no answer in time (as opposed to a refused or dropped connection, which is an answer). */
class SlowProbe extends Error {}

/** Probes each dependency every intervalMs on a connection of its own (a busy pool does not look like a dead server). */
export function startDependencyProbes(state: DependencyState, opts: ProbeOptions): DependencyProbes {
  const intervalMs = opts.intervalMs ?? 1000;
  const timeoutMs = opts.timeoutMs ?? 1500;
  const slowProbesToDown = opts.slowProbesToDown ?? 3;
  let stopped = false;
  // A refused or dropped connection marks a dependency down at once; a slow answer only after several in a row, so
  // a busy machine (a 2-core host under load answers SELECT 1 in seconds) is not mistaken for a dead server.
  const slow = new Map<DependencyName, number>();
  const failed = (name: DependencyName, err: unknown, startedAt: number) => {
    if (stopped) return;
    const isSlow = err instanceof SlowProbe || /timeout|deadline/i.test(firstLine(err) ?? '');
    const n = isSlow ? (slow.get(name) ?? 0) + 1 : slowProbesToDown;
    slow.set(name, n);
    if (n >= slowProbesToDown) state.markDown(name, firstLine(err) ?? 'no answer', startedAt);
  };
  const answered = (name: DependencyName) => {
    slow.delete(name);
    state.markUp(name);
  };
  let pg: Client | undefined;
  let temporal: Connection | undefined;

  const probePostgres = async (url: string) => {
    const startedAt = Date.now();
    try {
      if (!pg) {
        const c = new Client({ connectionString: url, application_name: 'armada-probe', connectionTimeoutMillis: timeoutMs });
        c.on('error', () => undefined); // a dropped connection fails the next probe
        pg = c;
        await within(timeoutMs, c.connect());
      }
      await within(timeoutMs, pg.query('SELECT 1'));
      answered('postgres');
    } catch (err) {
      pg?.end().catch(() => undefined);
      pg = undefined;
      failed('postgres', err, startedAt);
    }
  };
  const probeTemporal = async (address: string) => {
    const startedAt = Date.now();
    try {
      temporal ??= await Connection.connect({ address, connectTimeout: timeoutMs, channelArgs: TEMPORAL_CHANNEL_ARGS });
      const c = temporal;
      await within(timeoutMs, c.withDeadline(Date.now() + timeoutMs, () => c.workflowService.getSystemInfo({})));
      answered('temporal');
    } catch (err) {
      failed('temporal', err, startedAt);
    }
  };

  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> = Promise.resolve();
  const tick = () => {
    current = Promise.all([
      opts.databaseUrl ? probePostgres(opts.databaseUrl) : undefined,
      opts.temporalAddress ? probeTemporal(opts.temporalAddress) : undefined,
    ]).finally(() => {
      if (!stopped) timer = setTimeout(tick, intervalMs);
    });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current.catch(() => undefined);
      await pg?.end().catch(() => undefined);
      await temporal?.close().catch(() => undefined);
    },
  };
}

/** What a pool call answers while PostgreSQL is known down: classified unreachable (08006), so a 503 (lib/errors). */
function knownDown(): Error {
  return Object.assign(new Error('PostgreSQL is known to be unavailable (its health probe gets no answer); try again once it is back'), { code: '08006' });
}

type ConnectCallback = (err: Error | undefined, ...rest: unknown[]) => void;

/**
 * Ties a pool to what is known of PostgreSQL:
 * - while it is known down, asking the pool for a connection fails at once. Against a server that takes TCP
 *   connections but does not answer (a frozen host, a partition) it used to wait the connect timeout, 10 s a request;
 * - when it goes down, the connections still being opened are dropped, so the requests waiting for them answer 503
 *   now. A connection that has sent its query is left alone: the server may still run it when it answers again (it
 *   has the bytes), so failing the request would tell the client "not done" of a write that then commits. That
 *   request waits for the server, and its answer is true.
 * It is up again when the probe or the supervisor says so (within a probe interval, 1 s). So a new write is served
 * only while /health says the database is up; this replaces marking it up on a pool connect, which a pool that does
 * not connect while it is down can no longer give.
 */
export function tiePoolToDependencyState(state: DependencyState, pool: Pick<Pool, 'connect'>): void {
  const connect = pool.connect.bind(pool) as (cb?: ConnectCallback) => unknown;
  // pg-pool's own query() asks for its client through this.connect(callback): both forms are covered
  pool.connect = ((cb?: ConnectCallback) => {
    if (!state.isDown('postgres')) return connect(cb);
    if (!cb) return Promise.reject(knownDown());
    process.nextTick(() => cb(knownDown()));
    return undefined;
  }) as Pool['connect'];
  state.onDown((name) => {
    if (name !== 'postgres') return;
    const clients = (pool as unknown as { _clients?: unknown })._clients; // pg-pool's, connecting ones included
    if (!Array.isArray(clients)) return;
    for (const client of clients as { _connecting?: boolean; connection?: { stream?: { destroy?(): void } } }[]) {
      if (client._connecting === true) client.connection?.stream?.destroy?.(); // no query sent on it yet
    }
  });
}
