/**
 * kill -9 of PostgreSQL while `armada migrate` runs a migration (an upgrade's migration waiting for a table lock, or a
 * long rewrite), on a PostgreSQL of the test's own (test/support/ownPostgres.ts, started again on the same data).
 *
 * Checked: the run exits 1 with one line saying which migration was cut, that it was rolled back whole and what to do
 * (before: `Connection terminated unexpectedly` and a stack trace); nothing of that migration is recorded or applied;
 * the next run applies it and only it, and the database ends with the same schema as one migrated without a fault.
 *
 * Then `armada start` on that data directory as its embedded PostgreSQL (the first start after an upgrade), the
 * postmaster killed -9 inside the last migration's transaction: the start says so in one line, its supervisor restarts
 * the server, the migrations go on from the cut one, and the start comes up with the whole schema (before session 52
 * it exited 1 although its PostgreSQL was back a moment later; cli/startMigrate.ts).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { listMigrations, migrate } from '../../lib/db/migrate';
import { createPool } from '../../lib/db/pool';
import { ARMADA_BIN } from '../support/armadaProcess';
import { ctrlCWithin, serverPid, startArmada, type RunningArmada } from '../support/armadaStart';
import { env, eventually, logger } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { killProcessesUsing } from '../support/processes';

jest.setTimeout(180_000);

let dir: string;
let pg: OwnPostgres;
let armada: RunningArmada | undefined;
const DB = 'cut';
/** The URL of database `db` on the test's own server, or (port given) on the server armada start runs on the same data. */
const urlOf = (db: string, port?: number) => (port === undefined ? pg.url : pg.url.replace(/:\d+\//, `:${port}/`)).replace(/\/[^/?]+(\?|$)/, `/${db}$1`);

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-migrate-killed-'));
  pg = await startOwnPostgres(path.join(dir, 'pg')); // its own database is migrated at start: the reference schema
}, 150_000);

afterAll(async () => {
  try {
    if (armada && dir) await ctrlCWithin(armada, dir, 90_000);
  } finally {
    await pg?.close();
    if (dir) {
      killProcessesUsing(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
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

async function query<T>(db: string, sql: string, params: unknown[] = [], port?: number): Promise<T[]> {
  const c = new Client({ connectionString: urlOf(db, port) });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** Tables, columns, indexes, constraints, functions and triggers of the public schema, in a comparable form. */
async function schemaOf(db: string, port?: number): Promise<string[]> {
  const rows = await query<{ item: string }>(
    db,
    `
    SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS item
      FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'function ' || p.proname || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
    UNION ALL SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname FROM pg_trigger WHERE NOT tgisinternal`,
    [],
    port,
  );
  return rows.map((r) => r.item).sort();
}

/** Database `db` made and migrated as the release before left it: every migration but the last. */
async function earlierRelease(db: string): Promise<void> {
  const all = listMigrations();
  await query('postgres', `CREATE DATABASE ${db}`);
  const before = fs.mkdtempSync(path.join(dir, 'before-'));
  for (const m of all.slice(0, -1)) fs.writeFileSync(path.join(before, m.name), m.sql);
  const pool = createPool(urlOf(db), logger);
  await migrate(pool, before);
  await pool.end();
}

test('PostgreSQL killed during a migration: armada migrate says which one was cut and rolled back; the next run applies it alone and the schema is whole', async () => {
  const all = listMigrations();
  const last = all[all.length - 1] as (typeof all)[number];
  const table = /ALTER TABLE (\w+)/i.exec(last.sql)?.[1];
  if (!table) throw new Error(`the last migration ${last.name} alters no table: pick another way to hold it`);
  // every migration but the last, applied as an earlier release did
  await earlierRelease(DB);

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

test("armada start, its own PostgreSQL killed -9 during the first start's migration: one line saying so, the server restarted, the cut migration applied, and the start comes up with the whole schema", async () => {
  const all = listMigrations();
  const last = all[all.length - 1] as (typeof all)[number];
  // the start's database (`armada`) as the release before left it; the one migrated whole is kept as the reference
  await earlierRelease('upgrade');
  // a migration's DDL waits while this file is in the data directory (pg_stat_file reads it there), so the kill lands
  // inside the migration's transaction; the migrations' own bookkeeping (schema_migrations) is not held
  const hold = path.join(dir, 'pg', 'test-hold-migration');
  await query(
    'upgrade',
    `CREATE FUNCTION test_hold_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF current_query() NOT LIKE '%schema_migrations%' THEN
         WHILE (pg_stat_file('${path.basename(hold)}', true)).size IS NOT NULL LOOP PERFORM pg_sleep(0.1); END LOOP;
       END IF;
     END $$`,
  );
  await query('upgrade', 'CREATE EVENT TRIGGER test_hold_ddl ON ddl_command_start EXECUTE FUNCTION test_hold_ddl()');
  // a session of the first test's may still be ending
  await eventually(async () => query('postgres', 'ALTER DATABASE armada RENAME TO reference').then(() => true, () => false), 10_000, 200);
  await query('postgres', 'ALTER DATABASE upgrade RENAME TO armada');
  await pg.close(); // from here armada start runs the server on this data directory
  fs.writeFileSync(hold, '');

  const starting = startArmada(dir, { TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'), ARMADA_TASK_QUEUE: `migrate-killed-${process.pid}-${Date.now()}` });
  starting.then(
    (a) => (armada = a), // stopped by afterAll also when this test fails before its await
    () => undefined, // awaited below
  );
  /** The port of the server armada start runs (postmaster.pid's fourth line). */
  const port = () => Number(fs.readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const heldInDdl = async () =>
    (await query<{ n: number }>('armada', "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = 'armada' AND wait_event = 'PgSleep'", [], port()))[0]?.n === 1;
  await eventually(async () => heldInDdl().catch(() => false), 60_000, 100);
  process.kill(serverPid(dir, 'postgres'), 'SIGKILL');
  fs.rmSync(hold); // the migration's next run is not held

  armada = await starting;
  expect(armada.child.exitCode).toBeNull();
  expect(armada.output().split('\n').filter((l) => l.startsWith('armada: '))).toEqual([
    `armada: PostgreSQL stopped answering during migration ${last.name} (Connection terminated unexpectedly): it was rolled back whole (each migration is one transaction), and ${all.length - 1} of ${all.length} migrations are applied; the embedded PostgreSQL exited (code null, signal SIGKILL) and is being restarted: the migrations go on once it answers (waiting up to 60 s)`,
  ]);
  const health = `http://127.0.0.1:${(armada as RunningArmada).ports.task}/health`;
  await eventually(async () => (await fetch(health)).status === 200, 30_000, 250); // its probes have seen both servers
  // every migration applied once, the cut one by the restarted server, and the schema whole
  const applied = await query<{ name: string }>('armada', 'SELECT name FROM schema_migrations ORDER BY version', [], port());
  expect(applied.map((r) => r.name)).toEqual(all.map((m) => m.name));
  await query('armada', 'DROP EVENT TRIGGER test_hold_ddl; DROP FUNCTION test_hold_ddl()', [], port());
  expect(await schemaOf('armada', port())).toEqual(await schemaOf('reference', port()));
});
