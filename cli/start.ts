/** `armada start`: the all-in-one default. */
import { Runtime } from '@temporalio/worker';
import { startServices, SERVICE_NAMES } from '../api/services';
import { ensureWebAssets } from './webAssets';
import { assertTaskServiceBindAllowed, ConfigError } from '../lib/config';
import { bindIp, HostNotResolved, listenAddress } from '../lib/hostAddress';
import { createPool, sessionLimits, workerPoolOptions } from '../lib/db/pool';
import { resolveKeys } from '../lib/keys';
import { createMetrics } from '../lib/metrics';
import { createTemporalHandle } from '../lib/temporal/client';
import { createDependencyState, markUpOnPoolConnect, startDependencyProbes, type DependencyProbes } from '../lib/runtime/dependencies';
import { installLastResort } from '../lib/runtime/lastResort';
import { runShutdownSteps } from '../lib/runtime/shutdownSteps';
import { startWorkers, WorkerStartAbandoned } from '../workers/createWorker';
import { resolveLogFormat, type Logger } from '../lib/logger';
import { sdkLogger } from '../lib/temporal/sdkLogger';
import { bootstrap, startInfrastructure, untilSignal } from './runtime';
import { unreachableDatabaseUrl } from './migrate';
import { migrateOnOwnPostgres } from './startMigrate';
import { readyBanner, stoppedBanner } from './startBanner';

/**
 * Installs the Temporal SDK runtime before any worker exists: our own shutdown owns SIGINT/SIGTERM (so HTTP drains
 * first), and the SDK's metrics are served for Prometheus on metricsPort, at `host`'s IP address (the SDK takes no
 * host name: ARMADA_HOST=localhost made it refuse to start).
 */
export async function installTemporalRuntime(host: string, metricsPort: number | null, logger: Logger): Promise<void> {
  let bindAddress: string | undefined;
  if (metricsPort !== null) {
    try {
      bindAddress = listenAddress(await bindIp(host), metricsPort);
    } catch (err) {
      if (err instanceof HostNotResolved) throw new ConfigError(err.message);
      throw err;
    }
  }
  Runtime.install({
    shutdownSignals: [],
    logger: sdkLogger(logger),
    ...(bindAddress === undefined ? {} : { telemetryOptions: { metrics: { prometheus: { bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } } } }),
  });
}

export async function runStart(_flags: Record<string, unknown>): Promise<number> {
  const t0 = Date.now();
  const { config, logger } = bootstrap();
  assertTaskServiceBindAllowed(config);
  ensureWebAssets(config, logger);
  const keys = resolveKeys(config);
  const dependencies = createDependencyState(logger);
  let giveUp: (message: string) => void = () => undefined;
  const gaveUp = new Promise<string>((resolve) => {
    giveUp = resolve;
  });
  // the servers we own are restarted when they die; when one keeps dying we exit non-zero (below)
  const infra = await startInfrastructure(config, logger, {
    onDown: (name, reason) => dependencies.markDown(name, reason),
    onUp: (name) => dependencies.markUp(name),
    onGiveUp: (message) => giveUp(message),
  });
  // two pools: the API's connections carry config.apiDatabaseLimits (a request waits at most that long for a lock or a
  // statement, then answers 503), the workers' config.workerDatabase (no lock or statement limit: an activity waits
  // for a lock as long as it is held rather than fail a run on a limit), the migrations' none; as `armada api` and
  // `armada worker` apart (docs/configuration.md)
  const pool = createPool(infra.databaseUrl, logger, { max: 20, ...sessionLimits(config.apiDatabaseLimits) });
  const workerPool = createPool(infra.databaseUrl, logger, workerPoolOptions(config));
  const temporal = createTemporalHandle(infra.temporalAddress, config.temporal.namespace, { isDown: () => dependencies.isDown('temporal') });
  // a connection that hung stays hung: calls waiting on it get their 503 now, and the next call after the outage dials afresh
  dependencies.onDown('temporal', () => temporal.reconnect());
  markUpOnPoolConnect(dependencies, pool);
  // started once the migrations are done: a DATABASE_URL that does not answer is then the one line naming it (below),
  // not a warning that postgres is unavailable before it (nothing is served before that anyway; a server of our own
  // that dies meanwhile is called down by its supervisor)
  let probes: DependencyProbes | undefined;
  const metrics = createMetrics();
  let workers: Awaited<ReturnType<typeof startWorkers>> | undefined;
  let services: Awaited<ReturnType<typeof startServices>> | undefined;
  let stopping = false;
  // each part within a limit (lib/runtime/shutdownSteps.ts): a stuck one is named and left, and the stop still ends
  const shutdown = async () => {
    stopping = true;
    await runShutdownSteps(logger, [
      { name: 'http', limitMs: 15_000, run: () => services?.close() }, // drain HTTP first: no new work accepted
      // running activities get the grace period; a worker that cannot reach Temporal does not hold the rest up
      { name: 'workers', limitMs: config.shutdownGraceMs + 5000, run: () => workers?.stop() },
      { name: 'dependency probes', limitMs: 5000, run: () => probes?.stop() }, // the servers' own stop is not an outage
      { name: 'temporal client', limitMs: 5000, run: () => temporal.close() },
      { name: 'postgres pools', limitMs: 5000, run: () => Promise.all([pool.end(), workerPool.end()]) },
      // last: no client is left to see PostgreSQL terminate its connection; each server gets SIGKILL after its grace
      { name: 'postgres and temporal', limitMs: 30_000, run: () => infra.stop() },
    ]);
  };
  // from here an uncaught exception stops the servers too, instead of leaving them without their parent
  installLastResort(logger, shutdown);
  try {
    // its own PostgreSQL killed meanwhile is restarted by its supervisor, and the migrations go on (cli/startMigrate.ts)
    const postgres = infra.postgres;
    // a PostgreSQL of DATABASE_URL not answering is one line naming its host:port and what to do, as in `armada migrate`
    const applied = await migrateOnOwnPostgres(workerPool, postgres && (() => postgres.server()), gaveUp).catch((err: unknown) => {
      throw unreachableDatabaseUrl(config.databaseUrl, err);
    });
    if (applied.length) logger.info({ applied }, 'migrations applied');
    probes = startDependencyProbes(dependencies, { databaseUrl: infra.databaseUrl, temporalAddress: infra.temporalAddress, namespace: config.temporal.namespace });
    await installTemporalRuntime(config.host, config.temporal.metricsPort, logger);
    const runWorkers = async (onTemporalNotAnswering?: () => void) => {
      workers = await startWorkers({
        config,
        db: workerPool,
        logger,
        metrics,
        address: infra.temporalAddress,
        namespace: config.temporal.namespace,
        shutdownGraceMs: config.shutdownGraceMs,
        onTemporalNotAnswering,
        shouldStop: () => stopping,
      });
      const running = workers;
      if (stopping) {
        await running.stop(); // started again while a shutdown was under way
        return;
      }
      // the SDK reconnects by itself after a short outage; a worker it gave up on is started again once Temporal answers
      running.done.catch(async (err) => {
        if (stopping) return;
        logger.warn({ err: { message: (err as Error).message } }, 'worker stopped; starting it again once Temporal answers');
        await running.stop().catch(() => undefined);
        while (!stopping) {
          await new Promise((r) => setTimeout(r, 1000));
          if (stopping || dependencies.isDown('temporal')) continue;
          try {
            await runWorkers();
            return;
          } catch (e) {
            logger.debug({ err: { message: (e as Error).message } }, 'worker not started yet');
          }
        }
      });
    };
    // a Temporal that took the connection and does not answer the workers' search attribute check holds up only the
    // workers: the services start (what needs Temporal answers 503, as while it is down) and the workers start polling
    // once it answers; missing attributes found then stop the suite as at start (exit 1, the one line)
    let notAnswering: () => void = () => undefined;
    const waitingForTemporal = new Promise<void>((resolve) => (notAnswering = resolve));
    const workersStarted = runWorkers(() => notAnswering());
    await Promise.race([workersStarted, waitingForTemporal]);
    workersStarted.catch((err: unknown) => {
      if (!stopping && !(err instanceof WorkerStartAbandoned)) giveUp((err as Error).message);
    });
    services = await startServices(SERVICE_NAMES, { db: pool, config, keys, temporal, logger, metrics, dependencies });
  } catch (err) {
    await shutdown();
    throw err;
  }
  // the log stream's format: a JSON line among JSON log lines, text for a person at a terminal
  const output = { format: resolveLogFormat(config.logFormat, process.stdout.isTTY === true), tty: process.stdout.isTTY === true };
  const banner = readyBanner(
    {
      version: config.version,
      startupSeconds: (Date.now() - t0) / 1000,
      home: config.home,
      addresses: services.addresses,
      temporal: { address: infra.temporalAddress, uiUrl: infra.temporal && config.embedded.temporalUiPort ? `http://127.0.0.1:${config.embedded.temporalUiPort}` : undefined },
      postgresPort: infra.postgres ? config.embedded.pgPort : null,
      apiKeyFile: keys.apiKeyFile,
      generatedApiKey: keys.generatedApiKey,
    },
    output,
  );
  const stopped = untilSignal(logger, shutdown); // before the banner: a supervisor may signal as soon as it reads it
  process.stdout.write(banner);
  const failed = await Promise.race([stopped.then(() => undefined), gaveUp]);
  if (failed === undefined) {
    process.stdout.write(stoppedBanner(output));
    return 0;
  }
  // a dependency keeps dying: stop the rest and exit non-zero, so systemd or Kubernetes restarts the whole suite
  process.stderr.write(`armada: ${failed}\n`);
  await Promise.race([shutdown().catch(() => undefined), new Promise((r) => setTimeout(r, 15_000).unref())]);
  return 1;
}
