import { migrate } from '../lib/db/migrate';
import { createPool, isPostgresUnreachable } from '../lib/db/pool';
import { ConfigError } from '../lib/errors';
import { resolveLogFormat } from '../lib/logger';
import { eventLine } from './eventLine';
import { bootstrap, startInfrastructure } from './runtime';

/**
 * `err`, or when it says the PostgreSQL of `databaseUrl` (DATABASE_URL; undefined: the embedded one) cannot be reached,
 * the one line `armada migrate` and `armada start` exit 1 with: its host:port (never its password) and what to do.
 * "connect ECONNREFUSED 127.0.0.1:5432" named neither the setting nor what to do.
 */
export function unreachableDatabaseUrl(databaseUrl: string | undefined, err: unknown): unknown {
  if (!databaseUrl || !isPostgresUnreachable(err)) return err;
  let at = '';
  try {
    const url = new URL(databaseUrl);
    at = ` at ${url.hostname}:${url.port || '5432'}`;
  } catch {
    // a URL node-postgres took that URL() does not: the driver's own message names what it dialled
  }
  return new ConfigError(
    `the PostgreSQL of DATABASE_URL${at} cannot be reached (${(err as Error).message}): start it, or fix DATABASE_URL, or unset it to use the embedded PostgreSQL`,
  );
}

/**
 * `armada migrate`: DATABASE_URL, or the embedded server of $ARMADA_HOME (started for the run). Says what it applied
 * as the log lines are written: text on a terminal, one JSON line `{"event":"migrated","applied":[…]}` on a pipe or a
 * file, or with --json (ARMADA_LOG_FORMAT decides when set, as for the logs).
 */
export async function runMigrate(opts: { json?: boolean }): Promise<number> {
  const { config, logger } = bootstrap();
  const infra = await startInfrastructure({ ...config, temporal: { ...config.temporal, address: config.temporal.address ?? 'unused' } }, logger);
  const pool = createPool(infra.databaseUrl, logger);
  try {
    const applied = await migrate(pool).catch((err: unknown) => {
      throw unreachableDatabaseUrl(config.databaseUrl, err);
    });
    const json = opts.json || resolveLogFormat(config.logFormat, process.stdout.isTTY === true) === 'json';
    const msg = applied.length ? `applied ${applied.length} migration${applied.length === 1 ? '' : 's'}` : 'database is up to date';
    const text = applied.length ? `applied: ${applied.join(', ')}\n` : `${msg}\n`;
    process.stdout.write(json ? eventLine('migrated', msg, { applied }) : text);
    return 0;
  } finally {
    await pool.end();
    await infra.stop();
  }
}
