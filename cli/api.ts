/** `armada api`: HTTP services only, against DATABASE_URL and TEMPORAL_ADDRESS. */
import { SERVICE_NAMES, startServices, type ServiceName } from '../api/services';
import { assertTaskServiceBindAllowed, ConfigError } from '../lib/config';
import { createPool, sessionLimits } from '../lib/db/pool';
import { resolveKeys } from '../lib/keys';
import { createMetrics } from '../lib/metrics';
import { createTemporalHandle, type TemporalHandle } from '../lib/temporal/client';
import { requireSearchAttributesInTime, SearchAttributesMissing } from '../lib/temporal/searchAttributeCheck';
import type { Logger } from '../lib/logger';
import { createDependencyState, markUpOnPoolConnect, startDependencyProbes } from '../lib/runtime/dependencies';
import { installLastResort } from '../lib/runtime/lastResort';
import { runShutdownSteps } from '../lib/runtime/shutdownSteps';
import { bootstrap, untilSignal } from './runtime';
import { ensureWebAssets } from './webAssets';

export async function runApi(services: string[]): Promise<number> {
  const { config, logger } = bootstrap();
  for (const s of services) if (!(SERVICE_NAMES as readonly string[]).includes(s)) throw new ConfigError(`--service: "${s}" is not one of ${SERVICE_NAMES.join(', ')}`);
  if (services.length === 0 || services.includes('task')) {
    assertTaskServiceBindAllowed(config);
    ensureWebAssets(config, logger);
  }
  if (!config.databaseUrl) throw new ConfigError('DATABASE_URL is required for `armada api` (use `armada start` for the embedded defaults)');
  const names = (services.length ? services : SERVICE_NAMES) as ServiceName[];
  // a request waits at most config.apiDatabaseLimits for a lock or a statement, then answers 503 (docs/configuration.md)
  const pool = createPool(config.databaseUrl, logger, { max: 20, ...sessionLimits(config.apiDatabaseLimits) });
  const temporalAddress = config.temporal.address ?? '127.0.0.1:7233';
  const dependencies = createDependencyState(logger);
  const temporal = createTemporalHandle(temporalAddress, config.temporal.namespace, { isDown: () => dependencies.isDown('temporal') });
  // a connection that hung stays hung: calls waiting on it get their 503 now, and the next call after the outage dials afresh
  dependencies.onDown('temporal', () => temporal.reconnect());
  await checkSearchAttributes(temporal, config.temporal.namespace, logger);
  markUpOnPoolConnect(dependencies, pool);
  const probes = startDependencyProbes(dependencies, { databaseUrl: config.databaseUrl, temporalAddress, namespace: config.temporal.namespace });
  const running = await startServices(names, { db: pool, config, keys: resolveKeys(config), temporal, logger, metrics: createMetrics(), dependencies });
  // each part within a limit, as in `armada start` (lib/runtime/shutdownSteps.ts): a stuck one does not hold the stop
  const shutdown = async () => {
    await runShutdownSteps(logger, [
      { name: 'http', limitMs: 15_000, run: () => running.close() },
      { name: 'dependency probes', limitMs: 5000, run: () => probes.stop() },
      { name: 'temporal client', limitMs: 5000, run: () => temporal.close() },
      { name: 'postgres pool', limitMs: 5000, run: () => pool.end() },
    ]);
  };
  installLastResort(logger, shutdown); // an uncaught exception: one fatal line, the same stop, exit 70
  const stopped = untilSignal(logger, shutdown);
  process.stdout.write(`${JSON.stringify({ event: 'listening', addresses: running.addresses })}\n`);
  await stopped;
  return 0;
}

/**
 * Refuses to start (SearchAttributesMissing) on a namespace without Armada's search attributes: workflow starts
 * would fail. The API may start before Temporal is up, so an unreachable Temporal only logs a warning (the workers
 * check again when they start), and so does one that took the connection and does not answer the check within
 * SEARCH_ATTRIBUTES_CHECK_MS (lib/temporal/searchAttributeCheck.ts; frozen right after the connect, a frontend whose persistence hangs): before, the start
 * waited for that answer without a limit, listening on no port meanwhile, so even the requests that need no Temporal
 * got no answer at all.
 */
async function checkSearchAttributes(temporal: TemporalHandle, namespace: string, logger: Logger): Promise<void> {
  try {
    // the connect has its own 3 s
    await requireSearchAttributesInTime((await temporal.client()).connection, namespace);
  } catch (err) {
    if (err instanceof SearchAttributesMissing) throw err;
    logger.warn({ err: { message: (err as Error).message } }, 'could not check the Temporal search attributes; the workers check them when they start');
  }
}
