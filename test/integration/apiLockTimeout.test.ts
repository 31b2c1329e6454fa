/**
 * A row kept locked by a transaction that does not end (an operator's `BEGIN; SELECT … FOR UPDATE` left open in psql,
 * a stopped process's transaction): `armada api`'s pool opens its connections with a `lock_timeout`
 * (ARMADA_API_LOCK_TIMEOUT_MS, default 5 s; lib/db/pool.ts sessionLimits), so a request that needs that row answers
 * the documented 503 with Retry-After, having written nothing, instead of hanging until its client gives up (before:
 * no answer for as long as the lock was held). A lock held for less than the limit is simply waited for, and once the
 * stuck transaction ends the same requests succeed. `armada api` runs with its defaults (no limit set by the test).
 */
import { Client } from 'pg';
import { spawnedTaskApi } from '../support/spawnedTaskApi';
import type { TimedAnswer } from '../support/timedRequest';

jest.setTimeout(240_000);

/** Far above the default lock_timeout (5 s), far below "hangs until the lock is released" (it never is meanwhile). */
const ANSWER_BOUND_MS = 60_000;
const LOCK_TIMEOUT_MESSAGE = /^The database \(PostgreSQL\) could not get a lock held by another transaction within its lock_timeout; nothing was written; try again$/;

const stack = spawnedTaskApi({ tmpPrefix: 'armada-lock-timeout-', projectName: 'Locked rows' });
const { send, titleOf } = stack;

/** The answer, or a line saying it had not come within `ms` (the request is left to its own 120 s timeout). */
async function answerWithin(answer: Promise<TimedAnswer>, ms: number): Promise<TimedAnswer | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((r) => (timer = setTimeout(() => r(`no answer within ${ms / 1000} s`), ms)));
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function newTask(title: string): Promise<string> {
  const t = await send('POST', '/api/tasks', { projectId: stack.projectId, title });
  expect(t.status).toBe(201);
  return (t.body.data as { id: string }).id;
}

/** Another client's transaction that locks the task's row and stays open until `release`. */
async function lockRow(taskId: string): Promise<{ release(): Promise<void> }> {
  const other = new Client({ connectionString: stack.database.url, application_name: 'operator-psql' });
  await other.connect();
  await other.query('BEGIN');
  await other.query('SELECT id FROM tasks WHERE id = $1 FOR UPDATE', [taskId]);
  return {
    async release() {
      await other.query('COMMIT').catch(() => undefined);
      await other.end().catch(() => undefined);
    },
  };
}


test('a row locked by a transaction that stays open: PATCH and DELETE answer 503 with Retry-After and write nothing; both succeed once it ends', async () => {
  const taskId = await newTask('before the lock');
  const lock = await lockRow(taskId);
  let patched: TimedAnswer | string;
  let deleted: TimedAnswer | string;
  try {
    [patched, deleted] = await Promise.all([
      answerWithin(send('PATCH', `/api/tasks/${taskId}`, { title: 'while locked' }), ANSWER_BOUND_MS),
      answerWithin(send('DELETE', `/api/tasks/${taskId}`), ANSWER_BOUND_MS),
    ]);
  } finally {
    await lock.release();
  }
  process.stdout.write(`locked row: ${JSON.stringify([patched, deleted].map((a) => (typeof a === 'string' ? a : [a.status, a.ms])))}\n`);
  for (const a of [patched, deleted]) {
    expect(typeof a === 'string' ? a : { status: a.status, retryAfter: a.retryAfter, body: a.body }).toEqual({
      status: 503,
      retryAfter: '1',
      body: { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(LOCK_TIMEOUT_MESSAGE), details: { retryAfterSeconds: 1 } }, meta: expect.any(Object) },
    });
  }
  expect(await titleOf(taskId)).toBe('before the lock'); // nothing was written, the row is still there

  // the stuck transaction has ended: the same requests succeed, on the same process
  const again = await send('PATCH', `/api/tasks/${taskId}`, { title: 'after the lock' });
  expect([again.status, (again.body.data as { title?: string } | undefined)?.title]).toEqual([200, 'after the lock']);
  expect(await titleOf(taskId)).toBe('after the lock');
  const gone = await send('DELETE', `/api/tasks/${taskId}`);
  expect(gone.status).toBe(200);
  expect(await titleOf(taskId)).toBeUndefined();
});

test('a lock held for less than the limit is waited for: the request succeeds', async () => {
  const taskId = await newTask('briefly locked');
  const lock = await lockRow(taskId);
  const patch = send('PATCH', `/api/tasks/${taskId}`, { title: 'after a short wait' });
  await new Promise((r) => setTimeout(r, 1000));
  await lock.release();
  const a = await patch;
  expect([a.status, (a.body.data as { title?: string } | undefined)?.title]).toEqual([200, 'after a short wait']);
  expect(await titleOf(taskId)).toBe('after a short wait');
});
