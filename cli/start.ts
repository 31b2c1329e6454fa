/** `armada start`: the all-in-one default. */
import { Runtime } from '@temporalio/worker';
import { startServices, SERVICE_NAMES } from '../api/services';
import { assertTaskServiceBindAllowed } from '../lib/config';
import { migrate } from '../lib/db/migrate';
import { createPool } from '../lib/db/pool';
import { resolveKeys } from '../lib/keys';
import { createMetrics } from '../lib/metrics';
import { createTemporalHandle } from '../lib/temporal/client';
import { startWorkers } from '../workers/createWorker';
import type { Logger } from '../lib/logger';
import { sdkLogger } from '../lib/temporal/sdkLogger';
import { bootstrap, startInfrastructure, untilSignal } from './runtime';

/**
 * Installs the Temporal SDK runtime before any worker exists: our own shutdown owns SIGINT/SIGTERM (so HTTP drains
 * first), and the SDK's metrics are served for Prometheus on metricsPort.
 */
export function installTemporalRuntime(host: string, metricsPort: number | null, logger: Logger): void {
  Runtime.install({
    shutdownSignals: [],
    logger: sdkLogger(logger),
    ...(metricsPort === null
      ? {}
      : { telemetryOptions: { metrics: { prometheus: { bindAddress: `${host}:${metricsPort}`, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } } } }),
  });
}

export async function runStart(_flags: Record<string, unknown>): Promise<number> {
  const t0 = Date.now();
  const { config, logger } = bootstrap();
  assertTaskServiceBindAllowed(config);
  const keys = resolveKeys(config);
  const infra = await startInfrastructure(config, logger);
  const pool = createPool(infra.databaseUrl, logger, { max: 20 });
  const temporal = createTemporalHandle(infra.temporalAddress, config.temporal.namespace);
  const metrics = createMetrics();
  let workers: Awaited<ReturnType<typeof startWorkers>> | undefined;
  let services: Awaited<ReturnType<typeof startServices>> | undefined;
  const shutdown = async () => {
    await services?.close(); // drain HTTP first: no new work accepted
    await workers?.stop(); // running activities get the grace period
    await temporal.close();
    await pool.end().catch(() => undefined);
    await infra.stop();
  };
  try {
    const applied = await migrate(pool);
    if (applied.length) logger.info({ applied }, 'migrations applied');
    installTemporalRuntime(config.host, config.temporal.metricsPort, logger);
    workers = await startWorkers({ config, db: pool, logger, metrics, address: infra.temporalAddress, namespace: config.temporal.namespace });
    workers.done.catch((err) => logger.error({ err }, 'worker failed'));
    services = await startServices(SERVICE_NAMES, { db: pool, config, keys, temporal, logger, metrics });
  } catch (err) {
    await shutdown();
    throw err;
  }
  const lines = [
    `armada ${config.version} is up in ${((Date.now() - t0) / 1000).toFixed(1)} s (data in ${config.home})`,
    ...Object.entries(services.addresses).map(([name, addr]) => `  ${name.padEnd(14)} ${addr}`),
    `  temporal       ${infra.temporalAddress}${infra.temporal && config.embedded.temporalUiPort ? ` (UI http://${config.host}:${config.embedded.temporalUiPort})` : ''}`,
    `  postgres       ${infra.postgres ? `embedded, port ${config.embedded.pgPort}` : 'DATABASE_URL'}`,
  ];
  if (keys.generatedApiKey) lines.push(`  API key (X-API-Key for scheduler, agents, traces; shown once, stored in ${config.home}/api-key):`, `    ${keys.generatedApiKey}`);
  const stopped = untilSignal(logger, shutdown); // before the banner: a supervisor may signal as soon as it reads it
  process.stdout.write(`${lines.join('\n')}\nPress Ctrl-C to stop.\n`);
  await stopped;
  process.stdout.write('armada stopped\n');
  return 0;
}
