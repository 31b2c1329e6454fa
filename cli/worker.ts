/** `armada worker`: one Temporal worker process against DATABASE_URL and TEMPORAL_ADDRESS. */
import { ConfigError } from '../lib/config';
import { createPool } from '../lib/db/pool';
import { startWorkers } from '../workers/createWorker';
import { createMetrics } from '../lib/metrics';
import { bootstrap, untilSignal } from './runtime';
import { installTemporalRuntime } from './start';

export async function runWorker(opts: { queues?: string[]; concurrency?: number }): Promise<number> {
  const { config, logger } = bootstrap();
  if (!config.databaseUrl) throw new ConfigError('DATABASE_URL is required for `armada worker`');
  if (opts.concurrency !== undefined && (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)) throw new ConfigError('--concurrency must be a positive integer');
  installTemporalRuntime(config.host, process.env.ARMADA_TEMPORAL_METRICS_PORT ? config.temporal.metricsPort : null, logger);
  const pool = createPool(config.databaseUrl, logger);
  const workers = await startWorkers({
    config,
    db: pool,
    logger,
    metrics: createMetrics(),
    address: config.temporal.address ?? '127.0.0.1:7233',
    namespace: config.temporal.namespace,
    taskQueues: opts.queues,
    concurrency: opts.concurrency,
  });
  process.stdout.write(`${JSON.stringify({ event: 'worker-started', pid: process.pid, queues: workers.workers.map((w) => w.options.taskQueue) })}\n`);
  await untilSignal(logger, async () => {
    await workers.stop();
    await pool.end();
  });
  return 0;
}
