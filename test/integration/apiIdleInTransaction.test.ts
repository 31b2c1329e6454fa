/**
 * An API process stopped (SIGSTOP) in the middle of a request's transaction: before, the rows it had locked stayed
 * locked until it resumed, and every other process's request on them answered 503 at its lock_timeout. Now the API's
 * connections carry `idle_in_transaction_session_timeout` (ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS; lib/db/pool.ts
 * sessionLimits): PostgreSQL ends the stopped process's session once its transaction has waited that long for its next
 * statement, the transaction is rolled back, and another API process's write to the row goes through. The stopped
 * process, resumed, answers its request 503 (the documented message, not a 500), having written nothing, and serves
 * the next request. The moment is made certain with a trigger that sleeps 3 s in the request's UPDATE (a title
 * starting with HOLD): the process is stopped while its statement runs, so it is inside the transaction when it stops.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { createTestDatabase, makeGitRepo } from '../support/harness';
import { timedRequest, type TimedAnswer } from '../support/timedRequest';

jest.setTimeout(240_000);

const STALLED_APP = 'armada-api-stalled';
/** The stopped process's idle limit: short, so the test does not wait the default 30 s. */
const IDLE_LIMIT_MS = 3000;
const IDLE_MESSAGE = /^The database \(PostgreSQL\) ended the request's transaction: it waited for its next statement longer than its idle_in_transaction_session_timeout \(this process stalled\); nothing was written; try again$/;

let home: string;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
/** the process that is stopped mid-transaction */
let stalled: ApiProcess;
/** another API process on the same database; its lock_timeout (60 s) outlasts the stalled one's idle limit */
let other: ApiProcess;
let projectId: string;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-idle-in-tx-'));
  database = await createTestDatabase();
  await database.pool.query(`
    CREATE FUNCTION test_hold_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_sleep(3);
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_hold_update BEFORE UPDATE ON tasks FOR EACH ROW WHEN (NEW.title LIKE 'HOLD%') EXECUTE FUNCTION test_hold_update();`);
  [stalled, other] = await Promise.all([
    spawnApi({ home, databaseUrl: database.url, services: ['task'], env: { PGAPPNAME: STALLED_APP, ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_LIMIT_MS) } }),
    spawnApi({ home, databaseUrl: database.url, services: ['task'], env: { ARMADA_API_LOCK_TIMEOUT_MS: '60000' } }),
  ]);
  const p = await send(other, 'POST', '/api/projects', { name: 'Stalled mid-transaction', repository: { url: makeGitRepo() } });
  expect(p.status).toBe(201);
  projectId = (p.body.data as { id: string }).id;
}, 200_000);

afterAll(async () => {
  if (stalled?.child.pid && stalled.child.exitCode === null) process.kill(stalled.child.pid, 'SIGCONT');
  await Promise.all([stalled?.stop(), other?.stop()]);
  await database?.drop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const send = (api: ApiProcess, method: 'POST' | 'PATCH', url: string, payload?: unknown): Promise<TimedAnswer> =>
  timedRequest(`${api.base('task')}${url}`, { method, payload, timeoutMs: 120_000 });

/** Polls `read` until it answers something other than undefined (or fails the test after `ms`). */
async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const giveUpAt = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > giveUpAt) throw new Error(`not within ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The stalled process's backend running the request's UPDATE: its pid, state and wait. */
async function stalledBackend(): Promise<{ pid: number; state: string; wait_event: string | null } | undefined> {
  const { rows } = await database.pool.query<{ pid: number; state: string; wait_event: string | null }>(
    `SELECT pid, state, wait_event FROM pg_stat_activity WHERE application_name = $1 AND query LIKE '%UPDATE tasks%'`,
    [STALLED_APP],
  );
  return rows[0];
}

const titleOf = async (taskId: string) => (await database.pool.query<{ title: string }>('SELECT title FROM tasks WHERE id = $1', [taskId])).rows[0]?.title;

test('a process stopped inside its transaction: its session is ended at the idle limit, another process writes the row, and the stopped one answers 503 once resumed', async () => {
  const t = await send(other, 'POST', '/api/tasks', { projectId, title: 'before' });
  expect(t.status).toBe(201);
  const taskId = (t.body.data as { id: string }).id;
  const pid = stalled.child.pid as number;

  const stalledPatch = send(stalled, 'PATCH', `/api/tasks/${taskId}`, { title: 'HOLD: from the stopped process' });
  const backend = await until('the stalled process runs its UPDATE', async () => {
    const b = await stalledBackend();
    return b?.wait_event === 'PgSleep' ? b : undefined;
  });
  process.kill(pid, 'SIGSTOP');
  try {
    // its UPDATE ends while it is stopped: the transaction, holding the row's lock, waits for a statement that does not come
    await until('the stopped process is idle in its transaction', async () => ((await stalledBackend())?.state === 'idle in transaction' ? true : undefined));

    // the other process's write waits for the lock only until PostgreSQL ends the stopped one's session
    const written = await send(other, 'PATCH', `/api/tasks/${taskId}`, { title: 'from the other process' });
    expect([written.status, (written.body.data as { title?: string } | undefined)?.title]).toEqual([200, 'from the other process']);
    const { rows: left } = await database.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [backend.pid]);
    expect(left).toEqual([]); // the stopped process's session is gone
    expect(await titleOf(taskId)).toBe('from the other process');
    // still stopped: its request has no answer yet
    expect(await Promise.race([stalledPatch.then(() => 'answered'), new Promise((r) => setTimeout(() => r('waiting'), 500))])).toBe('waiting');
  } finally {
    process.kill(pid, 'SIGCONT');
  }

  // resumed: its request learns its transaction was ended, answers the documented 503, and wrote nothing
  const a = await stalledPatch;
  expect({ status: a.status, retryAfter: a.retryAfter, body: a.body }).toEqual({
    status: 503,
    retryAfter: '1',
    body: { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(IDLE_MESSAGE) }, meta: expect.any(Object) },
  });
  expect(await titleOf(taskId)).toBe('from the other process');
  const { rows: events } = await database.pool.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE data::text LIKE '%HOLD: from the stopped process%'`);
  expect(events[0]?.n).toBe('0');

  // and it serves the next request on a new connection
  const again = await send(stalled, 'PATCH', `/api/tasks/${taskId}`, { title: 'after the resume' });
  expect([again.status, (again.body.data as { title?: string } | undefined)?.title]).toEqual([200, 'after the resume']);
  expect(await titleOf(taskId)).toBe('after the resume');
});
