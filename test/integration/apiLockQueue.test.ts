/**
 * A queue of requests on one row held by a transaction that does not end (an operator's open `BEGIN … FOR UPDATE`):
 * how long can one request wait, end to end? PostgreSQL times each lock acquisition on its own (the row's queue of
 * waiters, then the holder's transaction: two waits of up to lock_timeout for one row), and with the API's 20
 * connections all waiting, the next requests first wait for a connection. Before, 60 PATCHes sent 100 ms apart, at
 * the default lock_timeout of 5 s, waited up to 18.8 s (3.75 times it) for their 503, and PATCHes of other rows sent
 * meanwhile up to 6 s for a connection. Now a transaction of the API has a wait budget of twice the lock_timeout for its
 * connection and its locks together (lib/db/pool.ts withTransaction; docs/configuration.md#the-apis-database-limits):
 * every PATCH of the held row answers the documented 503 within it (measured 10.0 s), having written nothing; the
 * other row's PATCHes go through; and once the holder ends, the row takes a PATCH again. The bound asserted has 5 s of
 * room above the budget for a loaded machine (it is 15 s; the 18.8 s before were beyond it).
 */
import { Client } from 'pg';
import { spawnedTaskApi } from '../support/spawnedTaskApi';
import type { TimedAnswer } from '../support/timedRequest';

jest.setTimeout(240_000);

/** the default lock_timeout (`armada api` runs with its defaults) */
const LOCK_TIMEOUT_MS = 5000;
const BOUND_MS = 2 * LOCK_TIMEOUT_MS + 5000;
const QUEUED = 60;
const LOCK_MESSAGE = 'The database (PostgreSQL) could not get a lock held by another transaction within its lock_timeout; nothing was written; try again';
const NO_CONNECTION_MESSAGE =
  'The database (PostgreSQL) had no connection free for the request in time: every connection of the API is busy, most likely waiting for a lock another transaction holds; nothing was written; try again';

const stack = spawnedTaskApi({ tmpPrefix: 'armada-lock-queue-', projectName: 'Queued on a row' });
const { send, titleOf } = stack;

async function newTask(title: string): Promise<string> {
  const t = await send('POST', '/api/tasks', { projectId: stack.projectId, title });
  expect(t.status).toBe(201);
  return (t.body.data as { id: string }).id;
}

const messageOf = (a: TimedAnswer) => (a.body.error as { message?: string } | undefined)?.message;

test(`${QUEUED} PATCHes queued on a row held by a transaction that stays open: each answers its 503 within twice the lock_timeout (plus room), writing nothing; other rows are written meanwhile`, async () => {
  const held = await newTask('held');
  const other = await newTask('other');
  const holder = new Client({ connectionString: stack.database.url, application_name: 'operator-psql' });
  await holder.connect();
  let queued: TimedAnswer[];
  let others: TimedAnswer[];
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM tasks WHERE id = $1 FOR UPDATE', [held]);
    const onHeld: Promise<TimedAnswer>[] = [];
    const onOther: Promise<TimedAnswer>[] = [];
    for (let i = 0; i < QUEUED; i++) {
      onHeld.push(send('PATCH', `/api/tasks/${held}`, { title: `queued ${i}` }));
      if (i % 10 === 0) onOther.push(send('PATCH', `/api/tasks/${other}`, { title: `other ${i}` }));
      await new Promise((r) => setTimeout(r, 100));
    }
    [queued, others] = await Promise.all([Promise.all(onHeld), Promise.all(onOther)]);
  } finally {
    await holder.query('COMMIT').catch(() => undefined);
    await holder.end().catch(() => undefined);
  }
  const longest = Math.max(...queued.map((a) => a.ms), ...others.map((a) => a.ms));
  process.stdout.write(`longest wait ${longest} ms; held row: ${JSON.stringify(queued.map((a) => [a.status, a.ms]))}; other row: ${JSON.stringify(others.map((a) => [a.status, a.ms]))}\n`);

  for (const a of queued) {
    expect({ status: a.status, retryAfter: a.retryAfter, code: (a.body.error as { code?: string } | undefined)?.code, message: messageOf(a) }).toEqual({
      status: 503,
      retryAfter: '1',
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringMatching(new RegExp(`^(${[LOCK_MESSAGE, NO_CONNECTION_MESSAGE].map((m) => m.replace(/[()]/g, '\\$&')).join('|')})$`)),
    });
  }
  expect(await titleOf(held)).toBe('held'); // none of them wrote
  // the other row's PATCHes waited for a connection at most their budget too; with connections freed every few seconds they get one
  for (const a of others) expect([a.status, a.status === 200 ? undefined : messageOf(a)]).toEqual([200, undefined]);
  expect(longest).toBeLessThan(BOUND_MS);

  // the holder ended: the row takes a PATCH again
  const again = await send('PATCH', `/api/tasks/${held}`, { title: 'after the holder' });
  expect([again.status, (again.body.data as { title?: string } | undefined)?.title]).toEqual([200, 'after the holder']);
  expect(await titleOf(held)).toBe('after the holder');
});
