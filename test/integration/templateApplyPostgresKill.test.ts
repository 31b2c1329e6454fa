/**
 * A template of many tasks applied while PostgreSQL is killed (kill -9 of the postmaster) in the middle of its
 * inserts: the apply is all or nothing. The answer is a 503 (not a 500, not a hang), no task and no task.created
 * event of it is stored once PostgreSQL is back, and the same apply sent again stores every task once, in order.
 * `armada api` and a PostgreSQL of this file's own; the middle is made certain by a trigger of the test's that sleeps
 * in the insert of the task titled HOLD while the table test_hold has a row.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually, makeGitRepo } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(300_000);

const TASKS = 60;
let home: string;
let pg: OwnPostgres;
let api: ApiProcess;

async function sql<T extends Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: pg.url });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}

const post = async (url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
  const r = await fetch(`${api.base('task')}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-template-pg-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url, services: ['task'] });
  await sql(`
    CREATE TABLE test_hold (on_ boolean);
    CREATE FUNCTION test_hold_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM test_hold) THEN PERFORM pg_sleep(120); END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_hold_insert AFTER INSERT ON tasks FOR EACH ROW WHEN (NEW.title = 'HOLD') EXECUTE FUNCTION test_hold_insert();
    INSERT INTO test_hold VALUES (true);`);
}, 240_000);

afterAll(async () => {
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

test(`PostgreSQL killed in the middle of applying a template of ${TASKS} tasks: 503, none of them stored; the apply sent again stores all, once`, async () => {
  const project = await post('/api/projects', { name: 'applied during a crash', repository: { url: makeGitRepo() } });
  expect(project.status).toBe(201);
  const projectId = (project.json.data as { id: string }).id;
  const titles = Array.from({ length: TASKS }, (_, i) => (i === TASKS / 2 ? 'HOLD' : `step ${i + 1}`));
  const template = await post('/api/task-templates', {
    name: 'many steps',
    description: 'applied while PostgreSQL dies',
    category: 'test',
    tasks: titles.map((title, i) => ({ title, description: '', order: i + 1 })),
  });
  expect(template.status).toBe(200);
  const templateId = (template.json.data as { id: string }).id;

  const applying = post(`/api/task-templates/${templateId}/apply`, { projectId });
  // half of the tasks are inserted, in the apply's open transaction, and the next one's insert sleeps
  await eventually(async () => (await sql("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'INSERT INTO tasks%'")).length > 0, 30_000, 50);
  await pg.kill();
  const answer = await applying;
  expect(answer.status).toBe(503);
  // nothing of it can be written later (the transaction died with the server): the answer says to send it again
  expect(answer.json).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/try again/) } });

  await pg.start();
  const stored = async () =>
    (await sql<{ title: string }>("SELECT title FROM tasks WHERE project_id = $1 AND metadata->>'templateId' = $2 ORDER BY (metadata->>'templateOrder')::int", [projectId, templateId])).map(
      (r) => r.title,
    );
  expect(await stored()).toEqual([]);
  const createdEvents = async () =>
    (await sql<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE type = 'task.created' AND data->>'projectId' = $1", [projectId]))[0]?.n;
  expect(await createdEvents()).toBe(0);

  // sent again (the API's pool finds PostgreSQL back by itself): every task once, in order
  await sql('DELETE FROM test_hold');
  const again = await eventually(async () => {
    const r = await post(`/api/task-templates/${templateId}/apply`, { projectId });
    return r.status === 503 ? undefined : r;
  }, 30_000, 500);
  expect(again.status).toBe(201);
  expect(((again.json.data as { tasks: { title: string }[] }).tasks).map((t) => t.title)).toEqual(titles);
  expect(await stored()).toEqual(titles);
  expect(await createdEvents()).toBe(TASKS);
});
