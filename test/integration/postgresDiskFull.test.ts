/**
 * PostgreSQL's disk full (SQLSTATE 53100) is an outage of PostgreSQL, not a fault of the request: the services answer
 * 503 in their own shape saying to free space, and the agent lines printed meanwhile wait in the worker and are all
 * written once space is back (lib/db/pool.ts isPostgresUnavailable, lib/attempts/logSink.ts). Before, every write was
 * a 500 and a batch of log lines was dropped after three tries.
 *
 * The disk is real: the test database's tables and indexes are moved to a tablespace on a small tmpfs mounted for the
 * test, which a filler file then fills (the WAL stays on the server's own disk, as it would with a data volume).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Client } from 'pg';
import { agentConfig, api } from '../support/attemptHelpers';
import { env, eventually, startTestStack, type TestStack } from '../support/harness';
import { mountSmallDisk, type SmallDisk } from '../support/smallDisk';

const LINES = 400;
// one numbered line every ~10 ms: ~5 s of output, the full disk in its middle
const CHATTY = `i=1; while [ $i -le ${LINES} ]; do echo "line $i"; i=$((i+1)); sleep 0.01; done`;
const KEY = 'test-api-key-0123456789';

let stack: TestStack;
let admin: Client;
let disk: SmallDisk | undefined;
const tablespace = `ts_full_${crypto.randomBytes(4).toString('hex')}`;

const logCount = async (processId: string) =>
  (await stack.db.query('SELECT count(*)::int AS n FROM process_logs WHERE process_id = $1', [processId])).rows[0].n as number;
/** Text that neither pglz nor a page's free space absorbs: it needs new TOAST pages. */
const bulky = (chars: number) => crypto.randomBytes(chars).toString('base64').slice(0, chars);

beforeAll(async () => {
  admin = new Client({ connectionString: env('ARMADA_TEST_ADMIN_URL') });
  await admin.connect();
  const dataDir = (await admin.query('SHOW data_directory')).rows[0].data_directory as string;
  const owner = fs.statSync(dataDir);
  disk = mountSmallDisk('24m', [`uid=${owner.uid}`, `gid=${owner.gid}`, 'mode=0700']);
  await admin.query(`CREATE TABLESPACE ${tablespace} LOCATION '${disk.dir}'`);

  stack = await startTestStack({
    services: ['task', 'agents'],
    worker: true,
    file: agentConfig({ agents: { chatty: { command: ['sh', '-c', CHATTY], format: 'text' } } }),
  });
  const user = (await stack.db.query('SELECT current_user AS u')).rows[0].u as string;
  await admin.query(`GRANT CREATE ON TABLESPACE ${tablespace} TO ${user}`);
  await stack.db.query(`ALTER TABLE ALL IN TABLESPACE pg_default SET TABLESPACE ${tablespace}`);
  await stack.db.query(`ALTER INDEX ALL IN TABLESPACE pg_default SET TABLESPACE ${tablespace}`);
}, 120_000);

afterAll(async () => {
  disk?.free();
  await stack?.close();
  await admin?.query(`DROP TABLESPACE IF EXISTS ${tablespace}`).catch(() => undefined);
  await admin?.end();
  disk?.remove();
});

test('with PostgreSQL\'s disk full, writes answer 503 saying to free space, agent lines wait, and all of it recovers once space is freed', async () => {
  const h = api(stack);
  const p = await h.project();
  const started = await h.start(await h.task(p.id, 'chatty through a full disk'), 'chatty');
  await eventually(async () => (await logCount(started.processId)) >= 20, 20_000, 20);
  disk?.fill();

  // a task whose description needs new pages: the task service's shape, 503, and nothing created
  const description = bulky(90_000);
  const taskRes = await h.inject('POST', '/api/tasks', { projectId: p.id, title: 'while full', description });
  expect(taskRes.statusCode).toBe(503);
  expect(taskRes.json()).toMatchObject({
    success: false,
    error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/out of disk space: free space on its disk, then try again/) },
  });
  expect(taskRes.body).not.toMatch(/could not extend|pg_tblspc|\bat .*\.ts:\d+/); // no server path, no stack
  // the other services' shape
  const memory = () => stack.app('agents').inject({ method: 'POST', url: '/api/v1/memory', payload: { content: bulky(60_000) }, headers: { 'x-api-key': KEY } });
  const memRes = await memory();
  expect(memRes.statusCode).toBe(503);
  expect(memRes.json()).toEqual({ detail: expect.stringMatching(/out of disk space: free space on its disk, then try again/) });
  expect((await stack.db.query('SELECT count(*)::int AS n FROM tasks WHERE title = $1', ['while full'])).rows[0].n).toBe(0);

  // the agent goes on printing; once the pages it had are full, none of it reaches the database
  await new Promise((r) => setTimeout(r, 3000));
  const held = await logCount(started.processId);
  expect(held).toBeLessThan(LINES - 100);
  disk?.free();

  const attempt = await h.until(started.attemptId, ['completed', 'failed'], 60_000);
  expect(attempt.status).toBe('completed');
  const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [started.processId]);
  expect(rows.filter((r) => r.message.startsWith('line ')).map((r) => r.message)).toEqual(Array.from({ length: LINES }, (_v, i) => `line ${i + 1}`));
  expect(rows.map((r) => r.seq)).toEqual(rows.map((_r, i) => i + 1)); // no gap, no repeat

  // the same requests now succeed, without a restart
  const again = await h.inject('POST', '/api/tasks', { projectId: p.id, title: 'after freeing', description });
  expect(again.statusCode).toBe(201);
  expect(again.json().data.description).toBe(description);
  expect((await memory()).statusCode).toBe(201);
}, 120_000);
