/**
 * The embedded PostgreSQL's clusters fold case the same on every host (lib/runtime/initdb.ts): their default
 * collation is PostgreSQL's builtin C.UTF-8, so lower() (the case-insensitive unique project names, ILIKE searches)
 * folds every Unicode letter also when the host has no UTF-8 locale. Before, initdb took the host's locale: started
 * with no LANG/LC_ALL (a bare CI machine, a service manager's empty environment) it made a C cluster, in which
 * lower('CAFÉ') is 'cafÉ', so `Café` and `CAFÉ` were two projects there and one project elsewhere.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(180_000);

let home: string;
let pg: OwnPostgres | undefined;

afterAll(async () => {
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

test('a cluster made on a host with no locale in its environment folds Unicode case and sorts by code point', async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pg-locale-'));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_COLLATE', 'LC_MESSAGES']) delete env[name];
  pg = await startOwnPostgres(path.join(home, 'pg'), 120_000, env);
  const c = new Client({ connectionString: pg.url });
  await c.connect();
  try {
    const { rows } = await c.query<{ provider: string; locale: string | null }>(
      'SELECT datlocprovider AS provider, datlocale AS locale FROM pg_database WHERE datname = current_database()',
    );
    expect(rows[0]).toEqual({ provider: 'b', locale: 'C.UTF-8' });
    const folded = await c.query<{ l: string; u: string; same: boolean }>(
      `SELECT lower('CAFÉ ÆØÅ ΣΟΦΊΑ') AS l, upper('straße é') AS u, lower('Café') = lower('CAFÉ') AS same`,
    );
    expect(folded.rows[0]).toEqual({ l: 'café æøå σοφία', u: 'STRAßE É', same: true });
    // the projects' unique name (migrations: lower(name)): a second project that differs only in case is refused
    await c.query('CREATE TEMP TABLE names (name text)');
    await c.query('CREATE UNIQUE INDEX ON names (lower(name))');
    await c.query(`INSERT INTO names VALUES ('Café')`);
    await expect(c.query(`INSERT INTO names VALUES ('CAFÉ')`)).rejects.toMatchObject({ code: '23505' });
    const sorted = await c.query<{ name: string }>(`SELECT name FROM (VALUES ('b'), ('B'), ('é'), ('a'), ('Z')) AS v(name) ORDER BY name`);
    expect(sorted.rows.map((r) => r.name)).toEqual(['B', 'Z', 'a', 'b', 'é']);
  } finally {
    await c.end();
  }
});
