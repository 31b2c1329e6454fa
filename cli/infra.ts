/** `armada infra`: embedded PostgreSQL + Temporal dev server + migrations, addresses printed as one JSON line. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../lib/db/migrate';
import { createPool } from '../lib/db/pool';
import { writeWorkflowBundle } from '../workers/createWorker';
import { bootstrap, startInfrastructure, untilSignal } from './runtime';

export async function runInfra(opts: { home?: string; pgPort?: number; temporalPort?: number; bundle?: string }): Promise<number> {
  if (opts.home) process.env.ARMADA_HOME = opts.home;
  else process.env.ARMADA_HOME ??= fs.mkdtempSync(path.join(os.tmpdir(), 'armada-infra-'));
  const { config, logger } = bootstrap();
  const infra = await startInfrastructure(
    {
      ...config,
      embedded: { pgPort: opts.pgPort ?? config.embedded.pgPort, temporalPort: opts.temporalPort ?? config.embedded.temporalPort, temporalUiPort: null },
    },
    logger,
  );
  const pool = createPool(infra.databaseUrl, logger);
  try {
    await migrate(pool);
    if (opts.bundle) await writeWorkflowBundle(opts.bundle);
  } catch (err) {
    await pool.end();
    await infra.stop();
    throw err;
  } finally {
    await pool.end().catch(() => undefined);
  }
  const stopped = untilSignal(logger, () => infra.stop()); // before the ready line: the caller may signal at once
  process.stdout.write(
    `${JSON.stringify({ event: 'ready', databaseUrl: infra.databaseUrl, adminUrl: infra.postgres?.adminUrl, temporalAddress: infra.temporalAddress, home: config.home, bundle: opts.bundle })}\n`,
  );
  await stopped;
  return 0;
}
