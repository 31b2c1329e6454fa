/**
 * Migration 090 (a workflow's immutable id) on a database with workflows and executions from before it: every
 * workflow gets its own id, every execution its workflow's, and from then on an execution row needs its workflow's
 * (id, name): a workflow re-created under a name does not take the old one's executions, nor can it get new ones.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createPool } from '../../lib/db/pool';
import { listMigrations, migrate } from '../../lib/db/migrate';
import { env, logger } from '../support/harness';

test('090 gives each workflow an id and each execution its workflow\'s; a workflow re-created under the name is another', async () => {
  const name = `m_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: env('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const pool = createPool(env('ARMADA_TEST_DATABASE_URL').replace(/\/armada$/, `/${name}`), logger);
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-migrations-'));
  const execution = (id: string, workflow: string) => [id, workflow, `execution:${id}`];
  try {
    for (const m of listMigrations().filter((m) => m.version < 90)) fs.writeFileSync(path.join(before, m.name), m.sql);
    await migrate(pool, before);
    await pool.query(`INSERT INTO scheduler_workflows (name, tasks) VALUES ('a', '[]'), ('b', '[]')`);
    await pool.query(
      `INSERT INTO scheduler_executions (id, workflow, temporal_workflow_id, trigger, status, started_at)
       VALUES ($1, $2, $3, 'manual', 'completed', now()), ($4, $5, $6, 'manual', 'running', now())`,
      [...execution('11111111-1111-4111-8111-111111111111', 'a'), ...execution('22222222-2222-4222-8222-222222222222', 'b')],
    );
    expect(await migrate(pool)).toEqual(listMigrations().filter((m) => m.version >= 90).map((m) => m.name));

    const ids = Object.fromEntries((await pool.query<{ name: string; id: string }>('SELECT name, id FROM scheduler_workflows')).rows.map((r) => [r.name, r.id]));
    expect(ids.a).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids.b).not.toBe(ids.a);
    const { rows } = await pool.query('SELECT id, workflow, workflow_id FROM scheduler_executions ORDER BY id');
    expect(rows).toEqual([
      { id: '11111111-1111-4111-8111-111111111111', workflow: 'a', workflow_id: ids.a },
      { id: '22222222-2222-4222-8222-222222222222', workflow: 'b', workflow_id: ids.b },
    ]);

    // deleted and created again under its name: the executions went with the old one, and the new one has another id
    await pool.query(`DELETE FROM scheduler_workflows WHERE name = 'a'`);
    await pool.query(`INSERT INTO scheduler_workflows (name, tasks) VALUES ('a', '[]')`);
    const again = (await pool.query<{ id: string }>(`SELECT id FROM scheduler_workflows WHERE name = 'a'`)).rows[0]?.id;
    expect(again).not.toBe(ids.a);
    expect((await pool.query(`SELECT id FROM scheduler_executions WHERE workflow = 'a'`)).rows).toEqual([]);
    // a row of the old workflow (its id) cannot be written under the name any more; one of another name's id neither
    const write = (workflowId: string) =>
      pool
        .query(
          `INSERT INTO scheduler_executions (id, workflow, workflow_id, temporal_workflow_id, trigger, status, started_at)
           VALUES (gen_random_uuid(), 'a', $1, 'x', 'manual', 'running', now())`,
          [workflowId],
        )
        .then(
          () => 'written',
          (err: { code?: string }) => err.code,
        );
    expect(await write(ids.a)).toBe('23503');
    expect(await write(ids.b)).toBe('23503');
    expect(await write(again as string)).toBe('written');
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(before, { recursive: true, force: true });
  }
});
