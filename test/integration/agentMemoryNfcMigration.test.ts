/**
 * Migration 107 (shared memory search whichever Unicode form) on a database with memory entries from before it: an
 * entry written decomposed (NFD) before the migration is found by a composed (NFC) query after it, and the reverse;
 * the search still uses the GIN index on the stored tsvector.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { searchMemory } from '../../lib/db/agentMemory';
import { createPool } from '../../lib/db/pool';
import { listMigrations, migrate } from '../../lib/db/migrate';
import { env, logger } from '../support/harness';

test('107 makes the memory entries stored before it searchable in either Unicode form, through the index', async () => {
  const name = `m_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: env('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const pool = createPool(env('ARMADA_TEST_DATABASE_URL').replace(/\/armada$/, `/${name}`), logger);
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-migrations-'));
  try {
    for (const m of listMigrations().filter((m) => m.version < 107)) fs.writeFileSync(path.join(before, m.name), m.sql);
    await migrate(pool, before);
    await pool.query(
      `INSERT INTO agent_memory (id, content, agent) VALUES
         ('nfd', 'Met at the cafe\u0301 by the station', 'old'),
         ('nfc', 'Ordered cr\u00e8me br\u00fbl\u00e9e twice', 'old')`,
    );
    const ids = async (q: string) => (await searchMemory(pool, q, { limit: 10 })).hits.map((h) => h.id);
    // before: the entry written decomposed has no composed word stored, so a query (read composed) does not find it
    expect({ cafeNfc: await ids('caf\u00e9'), cafeNfd: await ids('cafe\u0301') }).toEqual({ cafeNfc: [], cafeNfd: [] });

    expect(await migrate(pool)).toEqual(listMigrations().filter((m) => m.version >= 107).map((m) => m.name));
    expect({
      cafeNfc: await ids('caf\u00e9'),
      cafeNfd: await ids('cafe\u0301'),
      cremeNfc: await ids('cr\u00e8me'),
      cremeNfd: await ids('cre\u0300me'),
    }).toEqual({ cafeNfc: ['nfd'], cafeNfd: ['nfd'], cremeNfc: ['nfc'], cremeNfd: ['nfc'] });
    // kept as written
    expect((await pool.query("SELECT content FROM agent_memory WHERE id = 'nfd'")).rows[0].content).toBe('Met at the cafe\u0301 by the station');
    // the search's match is still answered by the GIN index on the new column (sequential scans off: the plan must use it)
    const c = await pool.connect();
    try {
      await c.query('SET enable_seqscan = off');
      const plan = (await c.query("EXPLAIN SELECT id FROM agent_memory WHERE search @@ to_tsquery('english', normalize('caf\u00e9', NFC))")).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('agent_memory_search_idx');
    } finally {
      c.release();
    }
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    fs.rmSync(before, { recursive: true, force: true });
  }
});
