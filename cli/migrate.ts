import { migrate } from '../lib/db/migrate';
import { createPool } from '../lib/db/pool';
import { bootstrap, startInfrastructure } from './runtime';

/** `armada migrate`: DATABASE_URL, or the embedded server of $ARMADA_HOME (started for the run). */
export async function runMigrate(): Promise<number> {
  const { config, logger } = bootstrap();
  const infra = await startInfrastructure({ ...config, temporal: { ...config.temporal, address: config.temporal.address ?? 'unused' } }, logger);
  const pool = createPool(infra.databaseUrl, logger);
  try {
    const applied = await migrate(pool);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    return 0;
  } finally {
    await pool.end();
    await infra.stop();
  }
}
