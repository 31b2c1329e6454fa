/**
 * kill -9 of PostgreSQL while `armada migrate` runs a migration (an upgrade's migration waiting for a table lock, or a
 * long rewrite), on a PostgreSQL of the test's own (test/support/ownPostgres.ts, started again on the same data).
 *
 * Checked: the run exits 1 with one line saying which migration was cut, that it was rolled back whole and what to do
 * (before: `Connection terminated unexpectedly` and a stack trace); nothing of that migration is recorded or applied;
 * the next run applies it and only it, and the database ends with the same schema as one migrated without a fault.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { listMigrations, migrate } from '../../lib/db/migrate';
import { createPool } from '../../lib/db/pool';
import { ARMADA_BIN } from '../support/armadaProcess';
import { eventually, logger } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(180_000);

let dir: string;
let pg: OwnPostgres;
const DB = 'cut';
const urlOf = (db: string) => pg.url.replace(/\/[^/?]+(\?|$)/, `/${db}$1`);

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-migrate-killed-'));
  pg = await startOwnPostgres(path.join(dir, 'pg')); // its own database is migrated at start: the reference schema
}, 150_000);

afterAll(async () => {
  await pg?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** bin/armada migrate on database `db`, piped (JSON lines). */
function armadaMigrate(db: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, ARMADA_HOME: dir, ARMADA_CONFIG: '', DATABASE_URL: urlOf(db), TEMPORAL_ADDRESS: '', ARMADA_LOG_FORMAT: 'json' };
    execFile(process.execPath, [ARMADA_BIN, 'migrate'], { env, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function query<T>(db: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: urlOf(db) });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** Tables, columns, indexes, constraints, functions and triggers of the public schema, in a comparable form. */
async function schemaOf(db: string): Promise<string[]> {
  const rows = await query<{ item: string }>(
    db,
    `
    SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS item
      FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'function ' || p.proname || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
    UNION ALL SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname FROM pg_trigger WHERE NOT tgisinternal`);
  return rows.map((r) => r.item).sort();
}

test('PostgreSQL killed during a migration: armada migrate says which one was cut and rolled back; the next run applies it alone and the schema is whole', async () => {
  const all = listMigrations();
  const last = all[all.length - 1] as (typeof all)[number];
  const table = /ALTER TABLE (\w+)/i.exec(last.sql)?.[1];
  if (!table) throw new Error(`the last migration ${last.name} alters no table: pick another way to hold it`);
  // every migration but the last, applied as an earlier release did
  await query('postgres', `CREATE DATABASE ${DB}`);
  const before = fs.mkdtempSync(path.join(dir, 'before-'));
  for (const m of all.slice(0, -1)) fs.writeFileSync(path.join(before, m.name), m.sql);
  const pool = createPool(urlOf(DB), logger);
  await migrate(pool, before);
  await pool.end();

  // the last one waits for a lock another session holds (an upgrade beside a long transaction), then the kill
  const holder = new Client({ connectionString: urlOf(DB) });
  holder.on('error', () => undefined); // its session ends with the server
  await holder.connect();
  await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const run = armadaMigrate(DB);
  await eventually(async () => (await query<{ n: number }>(DB, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%ALTER TABLE%'"))[0]?.n === 1, 60_000, 100);
  await pg.kill();
  const cut = await run;
  await holder.end().catch(() => undefined);

  expect(cut.code).toBe(1);
  expect(cut.stderr.trim()).toBe(
    `armada: PostgreSQL stopped answering during migration ${last.name} (Connection terminated unexpectedly): it was rolled back whole (each migration is one transaction), and ${all.length - 1} of ${all.length} migrations are applied; run armada migrate (or armada start) again once PostgreSQL answers: it applies ${last.name} and any after it`,
  );

  await pg.start();
  const applied = await query<{ name: string }>(DB, 'SELECT name FROM schema_migrations ORDER BY version');
  expect(applied.map((r) => r.name)).toEqual(all.slice(0, -1).map((m) => m.name));
  const again = await armadaMigrate(DB);
  expect(again).toMatchObject({ code: 0, stderr: '' });
  expect(JSON.parse(again.stdout.trim().split('\n').pop() as string)).toMatchObject({ event: 'migrated', applied: [last.name] });
  const reference = await schemaOf('armada');
  expect(reference.length).toBeGreaterThan(100);
  expect(await schemaOf(DB)).toEqual(reference);
});
