/**
 * Migration 075 (several schedules per workflow) on a database that has workflows from before it: every workflow gets
 * its default schedule row with its old cron, zone, jitter and pause state, at its old Temporal id.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createPool } from '../../lib/db/pool';
import { listMigrations, migrate } from '../../lib/db/migrate';
import { getWorkflow } from '../../lib/db/schedulerWorkflows';
import { env, logger } from '../support/harness';

test('075 moves each workflow schedule into a default schedule row, keeping the Temporal id', async () => {
  const name = `m_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: env('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const pool = createPool(env('ARMADA_TEST_DATABASE_URL').replace(/\/armada$/, `/${name}`), logger);
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-migrations-'));
  try {
    for (const m of listMigrations().filter((m) => m.version < 75)) fs.writeFileSync(path.join(before, m.name), m.sql);
    await migrate(pool, before);
    await pool.query(
      `INSERT INTO scheduler_workflows (name, description, schedule, timezone, jitter_ms, enabled, tasks) VALUES
         ('nightly', '', '30 9 * * *', 'Asia/Kolkata', 5000, false, '[{"name":"t","type":"script","script":"true"}]'),
         ('manual', '', NULL, 'Europe/Paris', 0, true, '[{"name":"t","type":"script","script":"true"}]')`,
    );
    expect(await migrate(pool)).toEqual(listMigrations().filter((m) => m.version >= 75).map((m) => m.name));

    const { rows } = await pool.query('SELECT workflow, temporal_id, is_default, type, cron, timezone, jitter_ms, enabled FROM scheduler_schedules ORDER BY workflow');
    expect(rows).toEqual([
      { workflow: 'manual', temporal_id: 'schedule:manual', is_default: true, type: 'cron', cron: null, timezone: 'Europe/Paris', jitter_ms: 0, enabled: true },
      { workflow: 'nightly', temporal_id: 'schedule:nightly', is_default: true, type: 'cron', cron: '30 9 * * *', timezone: 'Asia/Kolkata', jitter_ms: 5000, enabled: false },
    ]);
    // the workflow reads its own schedule fields from its default schedule
    expect(await getWorkflow(pool, 'nightly')).toMatchObject({ schedule: '30 9 * * *', timezone: 'Asia/Kolkata', jitter_ms: 5000, enabled: false });
    expect(await getWorkflow(pool, 'manual')).toMatchObject({ schedule: null, timezone: 'Europe/Paris', enabled: true });
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(before, { recursive: true, force: true });
  }
});
