/**
 * `armada worker`: one Temporal worker process against DATABASE_URL and TEMPORAL_ADDRESS. SIGTERM (or POST /drain on
 * the health port) drains it: polling stops, running activities get the grace period to finish, then they are
 * cancelled so Temporal retries them on another worker. Nothing accepted is lost.
 */
import os from 'node:os';
import { ConfigError, MAX_TIMER_MS } from '../lib/config';
import { createPool, workerPoolOptions } from '../lib/db/pool';
import { createMetrics } from '../lib/metrics';
import { startWorkers, WorkerStartAbandoned, workerQueues } from '../workers/createWorker';
import { startWorkerHealthServer } from '../workers/healthServer';
import { installLastResort } from '../lib/runtime/lastResort';
import { runShutdownSteps } from '../lib/runtime/shutdownSteps';
import { bootstrap, untilSignal } from './runtime';
import { installTemporalRuntime } from './start';

export interface WorkerFlags {
  queues?: string[];
  concurrency?: number;
  healthPort?: number;
  graceSeconds?: number;
  identity?: string;
  maxAgents?: number;
}

function positiveInt(name: string, v: number | undefined, min = 1, max = Number.MAX_SAFE_INTEGER): void {
  if (v === undefined) return;
  if (!Number.isInteger(v) || v < min) throw new ConfigError(`${name} must be an integer ≥ ${min}`);
  if (v > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}`);
}

/**
 * The longest --grace: the last resort (below) waits the grace plus 15 s in one Node timer, which runs a longer delay
 * after 1 ms, so a grace beyond this exited a draining worker at once.
 */
const MAX_GRACE_SECONDS = Math.floor((MAX_TIMER_MS - 15_000) / 1000);

export async function runWorker(opts: WorkerFlags): Promise<number> {
  const { config, logger } = bootstrap();
  if (!config.databaseUrl) throw new ConfigError('DATABASE_URL is required for `armada worker`');
  positiveInt('--concurrency', opts.concurrency);
  positiveInt('--grace', opts.graceSeconds, 0, MAX_GRACE_SECONDS);
  positiveInt('--health-port', opts.healthPort, 0, 65_535);
  positiveInt('--max-agents', opts.maxAgents);
  const identity = opts.identity ?? `${os.hostname()}-${process.pid}`;
  await installTemporalRuntime(config.host, process.env.ARMADA_TEMPORAL_METRICS_PORT ? config.temporal.metricsPort : null, logger);
  // 20 like an API process: a worker running hundreds of agents writes their samples, logs and ends concurrently;
  // config.workerDatabase: how long an activity waits for a connection, and its transactions' idle limit
  const pool = createPool(config.databaseUrl, logger, workerPoolOptions(config));
  const metrics = createMetrics();
  const address = config.temporal.address ?? '127.0.0.1:7233';
  const queues = workerQueues(config, opts.queues);
  let waitingFor: string | undefined = `Temporal at ${address}`;
  let draining = false;
  let requestDrain: () => void = () => undefined;
  const drainRequested = new Promise<void>((resolve) => (requestDrain = resolve));
  // open before the start waits for anything (Temporal, the search attribute check, the workflow bundle): a liveness
  // probe gets its 200 meanwhile, readiness a 503 saying what the start waits for (it found no port before)
  const health =
    opts.healthPort === undefined
      ? undefined
      : await startWorkerHealthServer({ host: config.host, port: opts.healthPort, metrics, state: () => ({ identity, queues, draining, waitingFor }), onDrain: requestDrain });
  const starting = startWorkers({
    config,
    db: pool,
    logger,
    metrics,
    address,
    namespace: config.temporal.namespace,
    taskQueues: opts.queues,
    concurrency: opts.concurrency,
    identity,
    maxAgents: opts.maxAgents,
    shutdownGraceMs: (opts.graceSeconds ?? 30) * 1000,
    untilTemporalConnects: true,
    onWaiting: (what) => {
      waitingFor = what;
    },
    shouldStop: () => draining,
  });
  let drained: Promise<void> | undefined;
  // a drain during the start ends its wait (WorkerStartAbandoned) or stops the workers it started after all
  const drain = () => {
    draining = true;
    drained ??= starting.then(
      (workers) => workers.stop(),
      () => undefined,
    );
    return drained;
  };
  // SIGTERM and POST /drain end the same way: polling stops, running work finishes (or is cancelled after the grace).
  // The handlers are in place before the started line: a supervisor may signal the moment it reads it.
  const stopped = Promise.race([untilSignal(logger, () => drain()), drainRequested.then(() => drain())]);
  // an uncaught exception: one fatal line, the drain (running work gets the grace period), exit 70
  installLastResort(logger, () => drain(), (opts.graceSeconds ?? 30) * 1000 + 15_000);
  try {
    await starting;
    waitingFor = undefined;
  } catch (err) {
    if (!(err instanceof WorkerStartAbandoned)) {
      // missing search attributes, a refusal other than an unreachable Temporal: the start fails as before (exit 1)
      await health?.close();
      await pool.end().catch(() => undefined);
      throw err;
    }
  }
  if (!draining) {
    process.stdout.write(`${JSON.stringify({ event: 'worker-started', pid: process.pid, identity, queues, health: health?.address })}\n`);
  }
  await stopped;
  await runShutdownSteps(logger, [
    { name: 'health endpoint', limitMs: 5000, run: () => health?.close() },
    { name: 'postgres pool', limitMs: 5000, run: () => pool.end() },
  ]);
  process.stdout.write(`${JSON.stringify({ event: 'worker-stopped', pid: process.pid, identity })}\n`);
  return 0;
}
