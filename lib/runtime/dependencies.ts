/**
 * Which of the process's dependencies (PostgreSQL, Temporal) are down right now, as the API sees them: set by cheap
 * periodic probes on their own connections (which also look at once when their PostgreSQL connection ends) and, in
 * `armada start`, at once by the supervisor when a server it owns exits. GET /health reports it, and calls that need
 * a down dependency answer 503 at once instead of hanging.
 */
import { status as grpcStatus } from '@grpc/grpc-js';
import { type Connection, isGrpcServiceError } from '@temporalio/client';
import { Client } from 'pg';
import { closeAtOnce } from '../db/closeAtOnce';
import { isPostgresShortOfResources, postgresRefusingConnectionsReason } from '../db/pool';
import type { Logger } from '../logger';
import { connectOrClose, TEMPORAL_CHANNEL_ARGS, temporalRefusal } from '../temporal/client';
import { redactUrlCredentials } from '../urlCredentials';

export type DependencyName = 'postgres' | 'temporal';
const NAMES: readonly DependencyName[] = ['postgres', 'temporal'];

export interface DependencyState {
  /** The dependencies known to be down, in a stable order (empty when all are up). */
  down(): DependencyName[];
  isDown(name: DependencyName): boolean;
  /** Why `name` was called down (the failure that did it, one line), while it is down; else undefined. */
  downReason(name: DependencyName): string | undefined;
  /**
   * `observedAt`: when the failing observation began (a probe's start). A failure that began before the latest sign of
   * life (markUp) is stale, e.g. a probe that dialled while the restarted server was still coming up, and is ignored.
   */
  markDown(name: DependencyName, reason: string, observedAt?: number): void;
  markUp(name: DependencyName): void;
  /**
   * PostgreSQL answers but refuses new connections for want of a resource (its probe's connect got SQLSTATE class 53,
   * mostly 53300: every `max_connections` slot taken): not down (the pool's open connections go on serving, and a
   * request that needs a new one gets its own 503 naming the cause at once), but said once in a warning, what it is and
   * what to do, and by /health while it lasts. `reason` undefined: it takes new connections again.
   */
  markRefusingConnections(reason: string | undefined): void;
  /** What markRefusingConnections said while it lasts, else undefined. */
  refusingConnections(): string | undefined;
  /** Calls `listener` each time `name` is called down (after the warning is logged); returns what unsubscribes it. */
  onDown(name: DependencyName, listener: () => void): () => void;
  /** Calls `listener` once, the next time `name` is called down; returns what unsubscribes it. */
  onceDown(name: DependencyName, listener: () => void): () => void;
}

export function createDependencyState(logger: Logger): DependencyState {
  const downSince = new Map<DependencyName, number>();
  const reasons = new Map<DependencyName, string>();
  const lastUp = new Map<DependencyName, number>();
  const listeners = new Map<DependencyName, Set<() => void>>(NAMES.map((n) => [n, new Set()]));
  let refusing: { reason: string; since: number } | undefined;
  const onDown = (name: DependencyName, listener: () => void) => {
    const set = listeners.get(name);
    set?.add(listener);
    return () => void set?.delete(listener);
  };
  return {
    down: () => NAMES.filter((n) => downSince.has(n)),
    isDown: (name) => downSince.has(name),
    downReason: (name) => (downSince.has(name) ? reasons.get(name) : undefined),
    markDown(name, reason, observedAt) {
      if (downSince.has(name)) return;
      if (observedAt !== undefined && (lastUp.get(name) ?? -1) >= observedAt) return;
      downSince.set(name, Date.now());
      // said on GET /health, which needs no key, and logged: a connection string in an error's words loses its password
      const said = redactUrlCredentials(reason);
      reasons.set(name, said);
      logger.warn({ dependency: name, reason: said }, `${name} is unavailable; requests that need it answer 503 until it is back`);
      for (const listener of [...(listeners.get(name) ?? [])]) listener();
    },
    markUp(name) {
      lastUp.set(name, Date.now());
      const since = downSince.get(name);
      if (since === undefined) return;
      downSince.delete(name);
      logger.info({ dependency: name, downMs: Date.now() - since }, `${name} is back`);
    },
    markRefusingConnections(reason) {
      if (reason === undefined) {
        if (refusing) logger.info({ dependency: 'postgres', refusedMs: Date.now() - refusing.since }, 'postgres takes new connections again');
        refusing = undefined;
        return;
      }
      if (refusing) return;
      refusing = { reason, since: Date.now() };
      logger.warn({ dependency: 'postgres' }, reason);
    },
    refusingConnections: () => refusing?.reason,
    onDown,
    onceDown(name, listener) {
      const off = onDown(name, () => {
        off();
        listener();
      });
      return off;
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
  /** A probe's deadline (default: PostgreSQL 1000 ms, Temporal 1500 ms). */
  timeoutMs?: number;
  /** Probes in a row that got no answer in time before a dependency counts as down (default 3). */
  slowProbesToDown?: number;
}

export interface DependencyProbes {
  /** Stops probing (before a shutdown stops the servers, so their stop is not reported as an outage). */
  stop(): Promise<void>;
}

/** How often `within` looks at the clock; a look later than this plus STALL_SLACK_MS means this process stalled. */
const WITHIN_TICK_MS = 100;
const STALL_SLACK_MS = 25;

/**
 * Waits for `p` for at most `ms` of this process's responsive time. Time in which this process itself could not run
 * (its event loop blocked by a workflow bundle being built, a long GC, a starved CPU) is not the dependency's
 * silence and does not count: before, a probe sent just before a 2 s stall of `armada start` timed out at the stall's
 * end, because the expired timer ran before the answer waiting in the socket was read, and three such probes called a
 * healthy PostgreSQL down. The verdict is given in a setImmediate, after the I/O poll phase, so an answer that has
 * arrived by then always wins.
 */
function within<T>(ms: number, p: Promise<T>): Promise<T> {
  const tickMs = Math.min(WITHIN_TICK_MS, ms);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    const started = performance.now();
    let last = started;
    let stalled = 0;
    const look = () => {
      const now = performance.now();
      stalled += Math.max(0, now - last - tickMs - STALL_SLACK_MS);
      last = now;
      if (now - started - stalled < ms) {
        timer = setTimeout(look, tickMs);
        return;
      }
      timer = undefined;
      setImmediate(() => reject(new SlowProbe(`no answer within ${ms} ms`)));
    };
    timer = setTimeout(look, tickMs);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const firstLine = (err: unknown) => ((err as Error)?.message ?? String(err)).split('\n')[0];

/** PostgreSQL probe connections kept waiting for a late answer after their deadline (see leaveWaiting). */
const MAX_LEFT_WAITING = 2;

/** Looks out of turn (the probe's PostgreSQL connection ended) come at most this often. */
const MIN_LOOK_GAP_MS = 100;

/** A probe that got no answer in time (as opposed to a refused or dropped connection, which is an answer). */
class SlowProbe extends Error {}

/** The workflow id Temporal's probe asks about (probeTemporal); no workflow of Armada's has it. */
const PROBE_WORKFLOW_ID = 'armada-dependency-probe:no-such-workflow';

/**
 * The probe's read was answered: NotFound (the workflow is not there: its persistence was read; or the namespace is
 * not, which no request of ours gets past either), or a refusal for a rate or resource limit (RESOURCE_EXHAUSTED:
 * Temporal is up but busy, and the requests it refuses so get the 503 that says it is overloaded, not "down").
 */
function probeReadAnswered(err: unknown): boolean {
  return isGrpcServiceError(err) && (err.code === grpcStatus.NOT_FOUND || err.code === grpcStatus.RESOURCE_EXHAUSTED);
}

/**
 * Probes each dependency every intervalMs on a connection of its own (a busy pool does not look like a dead server; a
 * hung connection of the API's client is not the probe's), a fresh one after a failed Temporal probe, and PostgreSQL
 * again at once when the server ends the probe's connection.
 *
 * A PostgreSQL probe that gets no answer within its deadline is followed by the next at once, on a new connection,
 * and the one left behind keeps waiting (two at most: leaveWaiting): an answer that comes late is a sign of life
 * like any other. So PostgreSQL is
 * called down only after it has answered nothing on any probe connection for three deadlines in a row (about 3 s of
 * this process's responsive time), as a frozen server does; a slow one (a loaded host) has answered one by then.
 */
export function startDependencyProbes(state: DependencyState, opts: ProbeOptions): DependencyProbes {
  const intervalMs = opts.intervalMs ?? 1000;
  const postgresTimeoutMs = opts.timeoutMs ?? 1000;
  const temporalTimeoutMs = opts.timeoutMs ?? 1500;
  const slowProbesToDown = opts.slowProbesToDown ?? 3;
  let stopped = false;
  // A refused or dropped connection marks a dependency down at once; a slow answer only after several in a row, so
  // a busy machine (a 2-core host under load answers SELECT 1 in seconds) is not mistaken for a dead server.
  const slow = new Map<DependencyName, number>();
  /** Records a failed probe; true when the next probe should look at once (slow, and not yet called down). */
  const failed = (name: DependencyName, err: unknown, startedAt: number, what?: string): boolean => {
    if (stopped) return false;
    // Temporal's UNAVAILABLE counts like a slow answer: the SDK's retries (not used by the probe) used to absorb the
    // transient ones (a connection rotated by the server's max connection age), and then it ended as a deadline; so
    // does a failure inside the server (its persistence read erring once, e.g. SQLite busy: INTERNAL, UNKNOWN)
    const isSlow =
      err instanceof SlowProbe ||
      /timeout|deadline/i.test(firstLine(err) ?? '') ||
      (name === 'temporal' && (/\bUNAVAILABLE\b/.test(firstLine(err) ?? '') || temporalRefusal(err) === 'failed'));
    const n = isSlow ? (slow.get(name) ?? 0) + 1 : slowProbesToDown;
    slow.set(name, n);
    if (n >= slowProbesToDown) state.markDown(name, `${what ? `${what}: ` : ''}${firstLine(err) ?? 'no answer'}`.slice(0, 300), startedAt);
    return err instanceof SlowProbe && n < slowProbesToDown;
  };
  const answered = (name: DependencyName) => {
    slow.delete(name);
    state.markUp(name);
  };
  let pg: Client | undefined;
  let answeredOn: Client | undefined; // the last connection a probe got an answer on
  const leftWaiting = new Set<Client>(); // connections whose probe got no answer in time, still waiting for one
  let temporal: Connection | undefined;
  const temporalLeftWaiting = new Set<Connection>(); // connections whose persistence read got no answer in time (see probeTemporal)

  /**
   * `step` (a connect or a SELECT 1 on `c`) got no answer in time: an answer it gets later still counts. At most
   * MAX_LEFT_WAITING are kept: the oldest (first in a frozen server's queue, the first a slow one answers) and the
   * newest (in case the oldest went silent on the way); the one a newer replaces is closed at once. Before, every
   * missed deadline left one more, about one every 2 s of a freeze, each a backend when the server ran again.
   */
  const leaveWaiting = (c: Client, step: Promise<unknown>) => {
    if (leftWaiting.size >= MAX_LEFT_WAITING) {
      const newest = [...leftWaiting].at(-1) as Client;
      leftWaiting.delete(newest);
      closeAtOnce(newest);
    }
    leftWaiting.add(c);
    step
      .then(
        () => {
          if (!stopped) answered('postgres');
        },
        () => undefined,
      )
      .finally(() => {
        leftWaiting.delete(c);
        c.end().catch(() => undefined);
      });
  };
  const probePostgres = async (url: string): Promise<boolean> => {
    const startedAt = Date.now();
    let step: Promise<unknown> | undefined;
    let connecting = false;
    try {
      if (!pg) {
        connecting = true;
        // no connectionTimeoutMillis: its timer would count this process's own stalls; `within` bounds the connect
        const c = new Client({ connectionString: url, application_name: 'armada-probe' });
        c.on('error', () => undefined); // the 'end' that follows is what counts
        // The server ended a connection that had answered (stopped, crashed, restarting; or only this session was
        // ended): look again now, on a new connection, instead of at the next interval. A refused connect is then an
        // outage at once, so requests get the gate's 503 from the first moment; a server that takes the new
        // connection is up, as before. One that never answered does not count: a proxy in front of a dead server
        // takes connections and drops them, and each would have asked for the next look at once, in a loop.
        c.on('end', () => {
          if (pg !== c || answeredOn !== c) return; // ended by the probe itself, or never up
          pg = undefined;
          postgresLooks?.lookNow();
        });
        pg = c;
        step = c.connect();
        await within(postgresTimeoutMs, step);
        connecting = false;
      }
      step = pg.query('SELECT 1');
      await within(postgresTimeoutMs, step);
      answeredOn = pg;
      answered('postgres');
      state.markRefusingConnections(undefined);
      // an answer here makes those still waiting for one useless: closed, not kept for as long as they wait
      for (const c of leftWaiting) closeAtOnce(c);
      leftWaiting.clear();
      return false;
    } catch (err) {
      const c = pg;
      pg = undefined;
      if (c && step && err instanceof SlowProbe && !stopped) leaveWaiting(c, step);
      else if (c) closeAtOnce(c); // no goodbye: a server that did not answer in time may never read it
      if (isPostgresShortOfResources(err)) {
        // refused for want of a resource (no connection slot free): an answer, so the server is up, not "not answering"
        // (before, a probe refused so called PostgreSQL down, and every request got "not answering" while the pool's
        // open connections could have served it)
        if (!stopped) {
          answered('postgres');
          if (connecting) state.markRefusingConnections(postgresRefusingConnectionsReason(err));
        }
        return false;
      }
      return failed('postgres', err, startedAt);
    }
  };
  /**
   * Temporal's probe reads from its persistence: DescribeWorkflowExecution of a workflow that does not exist, answered
   * NotFound once the history service has looked the id up in its database (one indexed SELECT on the SQLite file of
   * the dev server; nothing is written). GetSystemInfo, the probe before, is answered by the frontend from memory: a
   * Temporal whose persistence hung (the dev server's SQLite file locked by another process, a disk that stopped
   * answering) passed it, so it was never called down, and every request that needed it waited for its own deadline
   * (a start's 20 s, the scheduler's and the agents' 10 s) and /health said ready.
   *
   * A read that got no answer in time is left waiting, on its connection, until its own deadline (4 probe deadlines):
   * an answer that comes late is a sign of life like any other, so a persistence that answers slowly (a loaded dev
   * server, its one SQLite connection busy with writes) is not called down, one that answers nothing is. The
   * connection is closed when the read ends; so at most about four are open at once, each for at most 6 s.
   */
  const probeTemporal = async (address: string): Promise<boolean> => {
    const startedAt = Date.now();
    let reading: Promise<void> | undefined;
    try {
      // no SDK retry interceptor: one call is one probe (the probes retry every interval). Its retries waited in timers
      // that outlived stop(): closing the connection then made the next one throw from a timer, an uncaught exception
      // at Ctrl-C after an outage (armada exited 70)
      temporal ??= await connectOrClose({ address, connectTimeout: temporalTimeoutMs, channelArgs: TEMPORAL_CHANNEL_ARGS, interceptors: [] });
      const c = temporal;
      // the deadline only bounds a call left behind: `within` decides, without this process's own stalls
      reading = c
        .withDeadline(Date.now() + 4 * temporalTimeoutMs, () => c.workflowService.describeWorkflowExecution({ namespace: opts.namespace, execution: { workflowId: PROBE_WORKFLOW_ID } }))
        .then(
          () => undefined, // someone started a workflow of that id: read all the same
          (err: unknown) => {
            if (!probeReadAnswered(err)) throw err;
          },
        );
      await within(temporalTimeoutMs, reading);
      answered('temporal');
    } catch (err) {
      // the next probe dials afresh: a connection whose peer took it and went silent (a hung host, a partition, a
      // black-holing proxy) is never given up by grpc-js while its handshake waits, so probing on it again would
      // report Temporal down for as long as that socket stays open, also once the server answers new connections
      const gone = temporal;
      temporal = undefined;
      if (gone && reading && err instanceof SlowProbe && !stopped) leaveTemporalWaiting(gone, reading);
      else await gone?.close().catch(() => undefined);
      failed('temporal', err, startedAt, reading ? 'DescribeWorkflowExecution (a read of its persistence)' : undefined);
    }
    return false; // Temporal's probes keep to the interval
  };
  const leaveTemporalWaiting = (c: Connection, reading: Promise<void>) => {
    temporalLeftWaiting.add(c);
    reading
      .then(
        () => {
          if (!stopped) answered('temporal');
        },
        () => undefined,
      )
      .finally(() => {
        temporalLeftWaiting.delete(c);
        c.close().catch(() => undefined);
      });
  };

  const isStopped = () => stopped;
  const postgresLooks: Looks | undefined = opts.databaseUrl ? repeatLooks(intervalMs, isStopped, probePostgres.bind(null, opts.databaseUrl)) : undefined;
  const temporalLooks = opts.temporalAddress ? repeatLooks(intervalMs, isStopped, probeTemporal.bind(null, opts.temporalAddress)) : undefined;
  return {
    async stop() {
      stopped = true;
      await Promise.all([postgresLooks?.stop(), temporalLooks?.stop()]);
      for (const c of leftWaiting) closeAtOnce(c); // a frozen server never says goodbye
      await pg?.end().catch(() => undefined);
      await temporal?.close().catch(() => undefined);
      await Promise.all([...temporalLeftWaiting].map((c) => c.close().catch(() => undefined)));
    },
  };
}

interface Looks {
  /** A look out of turn: at once, or right after the one under way; never sooner than MIN_LOOK_GAP_MS after the last. */
  lookNow(): void;
  /** No look after the one under way, which it waits for. */
  stop(): Promise<void>;
}

/** Runs `look` every intervalMs, or at once after a look that asks for it (resolves true). */
function repeatLooks(intervalMs: number, stopped: () => boolean, look: () => Promise<boolean>): Looks {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> = Promise.resolve();
  let looking = false;
  let lookAgain = false; // asked to look while a look was under way: once more right after it
  let lastLook = Number.NEGATIVE_INFINITY;
  const tick = () => {
    looking = true;
    lastLook = performance.now();
    current = look()
      .catch(() => false)
      .then((soon) => {
        looking = false;
        if (stopped()) return;
        if (lookAgain || soon) {
          lookAgain = false;
          lookNow();
        } else timer = setTimeout(tick, intervalMs);
      });
  };
  function lookNow() {
    if (stopped()) return;
    if (looking) {
      lookAgain = true;
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(tick, Math.max(0, lastLook + Math.min(MIN_LOOK_GAP_MS, intervalMs) - performance.now()));
  }
  tick();
  return {
    lookNow,
    async stop() {
      if (timer) clearTimeout(timer);
      await current.catch(() => undefined);
    },
  };
}

/**
 * A client of the pool that connects is a sign of life: PostgreSQL is up again at once, not at the next probe (so a
 * write that was just served never sits beside a /health that still says the database is down).
 */
export function markUpOnPoolConnect(state: DependencyState, pool: { on(event: 'connect', fn: () => void): unknown }): void {
  pool.on('connect', () => {
    state.markUp('postgres');
    state.markRefusingConnections(undefined); // it took a new connection
  });
}
