/** Applies the numbered SQL files of lib/db/migrations in order, each in its own transaction, once. */
import fs from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import { OperatorError } from '../errors';
import { isPostgresUnavailable, withTransaction } from './pool';

const MIGRATIONS_DIR = path.join(__dirname, 'migrations');
const LOCK_ID = 72_617_201; // advisory lock: concurrent `armada migrate` runs wait for each other

/**
 * PostgreSQL went away (killed, restarted, its disk full) while a migration ran: that migration was rolled back with
 * its transaction, those before it stay applied, and the next run goes on from it. Said in one line, not as the
 * driver's `Connection terminated unexpectedly` (which `armada migrate` took for a DATABASE_URL it could not reach).
 */
export class MigrationCut extends OperatorError {
  constructor(
    /** The migration that was cut (rolled back whole). */
    readonly migration: string,
    /** What happened to it and how far the migrations are, without what to do (`armada start` says its own). */
    readonly what: string,
    /** The driver's error that cut it. */
    readonly error: unknown,
  ) {
    super(`${what}; run armada migrate (or armada start) again once PostgreSQL answers: it applies ${migration} and any after it`);
  }
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .map((f) => ({ version: Number(f.split('_')[0]), name: f, sql: fs.readFileSync(path.join(dir, f), 'utf8') }))
    .sort((a, b) => a.version - b.version);
}

/** Returns the names of the migrations applied by this call. */
export async function migrate(pool: Pool, dir = MIGRATIONS_DIR): Promise<string[]> {
  const lockClient = await pool.connect();
  try {
    // a migration may wait for locks (another process's long transaction) and run long (a table rewritten): whatever
    // limits the pool's connections carry (lib/db/pool.ts sessionLimits), a migration has none; RESET below
    await lockClient.query('SET lock_timeout = 0; SET statement_timeout = 0');
    await lockClient.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    await lockClient.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await lockClient.query<{ version: number }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: string[] = [];
    const all = listMigrations(dir);
    for (const m of all) {
      if (done.has(m.version)) continue;
      try {
        await withTransaction(pool, async (c) => {
          await c.query('SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0');
          await c.query(m.sql);
          await c.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        });
      } catch (err) {
        if (!isPostgresUnavailable(err)) throw err;
        const appliedNow = all.filter((x) => done.has(x.version)).length + applied.length;
        throw new MigrationCut(
          m.name,
          `PostgreSQL stopped answering during migration ${m.name} (${(err as Error).message}): it was rolled back whole (each migration is one transaction), and ${appliedNow} of ${all.length} migrations are applied`,
          err,
        );
      }
      applied.push(m.name);
    }
    return applied;
  } finally {
    await lockClient.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => undefined);
    // back to the connection's own limits before it returns to the pool; one that cannot be reset is not reused
    const reset = await lockClient.query('RESET lock_timeout; RESET statement_timeout').then(
      () => true,
      () => false,
    );
    lockClient.release(!reset);
  }
}
