/** An `armada worker` of its own process for a test stack started with `worker: false` (for kill -9 tests). */
import type { ChildProcess } from 'node:child_process';
import { spawnArmada } from './armadaProcess';
import { env, type TestStack } from './harness';

export async function spawnStackWorker(
  stack: Pick<TestStack, 'dbUrl' | 'config'>,
  opts: {
    /** a database other than the stack's (e.g. a PostgreSQL of the test's own) */
    databaseUrl?: string;
    /** where it reaches Temporal, when not directly (e.g. a TCP proxy of the test's, test/support/tcpProxy.ts) */
    temporalAddress?: string;
    readyTimeoutMs?: number;
    /** flags of `armada worker` (e.g. `--grace 1`) */
    args?: string[];
    /** more variables of its environment (e.g. ARMADA_LAUNCHER=off) */
    env?: Record<string, string>;
  } = {},
): Promise<ChildProcess> {
  const { child } = await spawnArmada(
    ['worker', ...(opts.args ?? [])],
    'worker-started',
    {
      ...process.env,
      DATABASE_URL: opts.databaseUrl ?? stack.dbUrl,
      TEMPORAL_ADDRESS: opts.temporalAddress ?? env('ARMADA_TEST_TEMPORAL_ADDRESS'),
      ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue,
      ARMADA_HOME: stack.config.home,
      ARMADA_CONFIG: stack.config.configPath,
      ARMADA_LOG_LEVEL: 'warn',
      ARMADA_TEMPORAL_METRICS_PORT: '',
      ...opts.env,
    },
    opts.readyTimeoutMs ?? 60_000,
  );
  return child;
}
