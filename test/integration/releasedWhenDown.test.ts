/**
 * What a request released by a frozen PostgreSQL had sent (lib/db/releasedWhenDown.ts), on a PostgreSQL of this
 * file's own that it freezes for real (SIGSTOP): each released request's answer is true once the server runs again.
 * A statement of a transaction whose COMMIT was not sent is rolled back ("try again"); a COMMIT or a statement of its
 * own that was with the server may be applied ("outcome unknown"), and is; a request waiting for a connection sent
 * nothing. What is no request (the worker, background work) is not released: it gets its answer at the thaw.
 * PostgreSQL is called down by hand here, as the probes do (test/integration/postgresFrozenFailFast.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, type Pool, type PoolClient } from 'pg';
import { createPool, withTransaction } from '../../lib/db/pool';
import { POSTGRES_NOT_ANSWERING, POSTGRES_OUTCOME_UNKNOWN, releasedWhenDown, runInDatabaseRequest } from '../../lib/db/releasedWhenDown';
import { createDependencyState, type DependencyState } from '../../lib/runtime/dependencies';
import { eventually, logger } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(180_000);

let home: string;
let pg: OwnPostgres;
let raw: Pool;
let db: Pool;
let admin: Client;
let dependencies: DependencyState;
let thaw: (() => void) | undefined;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-released-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  raw = createPool(pg.url, logger, { max: 3 });
  admin = new Client({ connectionString: pg.url });
  await admin.connect();
  await admin.query('CREATE TABLE released_rows (id text PRIMARY KEY)');
}, 150_000);

beforeEach(() => {
  dependencies = createDependencyState(logger);
  db = releasedWhenDown(raw, dependencies);
});

afterEach(async () => {
  thaw?.();
  thaw = undefined;
  dependencies.markUp('postgres');
});

afterAll(async () => {
  thaw?.();
  await raw?.end();
  await admin?.end();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A request waiting for its answer (a new one each time: a released one remembers what it was told). */
const write = () => ({ answered: () => false, readOnly: false });
const read = () => ({ answered: () => false, readOnly: true });

/** The error `p` rejects with (or the value it resolves to, to fail the comparison). */
const outcome = (p: Promise<unknown>) =>
  p.then(
    (value) => ({ resolved: value }),
    (err: { statusCode?: number; message?: string; details?: unknown }) => ({ statusCode: err.statusCode, message: err.message, details: err.details }),
  );

const rows = async (id: string) => (await admin.query('SELECT count(*)::int AS n FROM released_rows WHERE id = $1', [id])).rows[0].n as number;

/** Waits until the session of backend `pid` has ended (the server ran what it had, then the goodbye). */
const sessionEnded = (pid: number) => eventually(async () => (await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0].n === 0, 30_000, 100);

type Outcome = { resolved: unknown } | { statusCode?: number; message?: string; details?: unknown };

/** Once the statement of `answer` has reached the frozen server, calls PostgreSQL down; how `answer` then ends. */
async function calledDownWhileWaiting(answer: Promise<unknown>): Promise<Outcome | string> {
  const o = outcome(answer);
  await sleep(300); // written to the frozen server's socket
  dependencies.markDown('postgres', 'frozen (test)');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((r) => (timer = setTimeout(() => r('not released within 10 s'), 10_000)));
  try {
    return await Promise.race([o, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once `freeze` (given to the request's code) has frozen the server. */
function freezer(): { frozen: Promise<void>; freeze(): void } {
  let done!: () => void;
  const frozen = new Promise<void>((r) => (done = r));
  return {
    frozen,
    freeze() {
      thaw = pg.freeze();
      done();
    },
  };
}

function thawNow(): void {
  thaw?.();
  thaw = undefined;
}

test('a statement of a transaction whose COMMIT was not sent: "try again", and the transaction is rolled back at the thaw', async () => {
  let backend = 0;
  const f = freezer();
  const answer = runInDatabaseRequest(write(), () =>
    withTransaction(db, async (c: PoolClient) => {
      backend = (c as unknown as { processID: number }).processID;
      await c.query('INSERT INTO released_rows (id) VALUES ($1)', ['in-transaction']);
      f.freeze(); // the next statement goes to the frozen server
      await c.query('INSERT INTO released_rows (id) VALUES ($1)', ['in-transaction-too']);
    }),
  );
  await f.frozen;
  expect(await calledDownWhileWaiting(answer)).toEqual({ statusCode: 503, message: POSTGRES_NOT_ANSWERING, details: undefined });
  thawNow();
  await sessionEnded(backend); // the server ran the statement, then the session's end: the transaction is gone
  expect([await rows('in-transaction'), await rows('in-transaction-too')]).toEqual([0, 0]);
});

test('the COMMIT with the frozen server: "outcome unknown", and it is applied at the thaw', async () => {
  const f = freezer();
  const answer = runInDatabaseRequest(write(), () =>
    withTransaction(db, async (c: PoolClient) => {
      await c.query('INSERT INTO released_rows (id) VALUES ($1)', ['committed']);
      f.freeze(); // withTransaction's COMMIT goes to the frozen server
    }),
  );
  await f.frozen;
  expect(await calledDownWhileWaiting(answer)).toEqual({ statusCode: 503, message: POSTGRES_OUTCOME_UNKNOWN, details: { outcome: 'unknown' } });
  thawNow();
  await eventually(async () => (await rows('committed')) === 1, 30_000);
});

test('a statement of its own on an open connection: "outcome unknown" in a write, applied at the thaw; in a read, "try again"', async () => {
  await Promise.all([raw.query('SELECT pg_sleep(0.2)'), raw.query('SELECT pg_sleep(0.2)')]); // two idle connections
  thaw = pg.freeze();
  const writing = runInDatabaseRequest(write(), () => db.query('INSERT INTO released_rows (id) VALUES ($1)', ['own-statement']));
  expect(await calledDownWhileWaiting(writing)).toEqual({ statusCode: 503, message: POSTGRES_OUTCOME_UNKNOWN, details: { outcome: 'unknown' } });
  dependencies.markUp('postgres');
  const reading = runInDatabaseRequest(read(), () => db.query('SELECT count(*) FROM released_rows'));
  expect(await calledDownWhileWaiting(reading)).toEqual({ statusCode: 503, message: POSTGRES_NOT_ANSWERING, details: undefined });
  thawNow();
  await eventually(async () => (await rows('own-statement')) === 1, 30_000);
});

test('waiting for a connection: "try again", nothing sent; the connection goes back to the pool when it comes', async () => {
  const held = await Promise.all([raw.connect(), raw.connect(), raw.connect()]); // the pool (max 3) is taken
  thaw = pg.freeze();
  const waiting = runInDatabaseRequest(write(), () => db.query('INSERT INTO released_rows (id) VALUES ($1)', ['never-sent']));
  const released = await calledDownWhileWaiting(waiting);
  for (const c of held) c.release();
  expect(released).toEqual({ statusCode: 503, message: POSTGRES_NOT_ANSWERING, details: undefined });
  thawNow();
  dependencies.markUp('postgres');
  await eventually(async () => raw.waitingCount === 0 && raw.idleCount === raw.totalCount, 30_000);
  expect(await rows('never-sent')).toBe(0);
});

test('no request, or one already answered: nothing is released, the statement gets its answer at the thaw', async () => {
  thaw = pg.freeze();
  const background = db.query('SELECT 1 AS one');
  const afterAnswer = runInDatabaseRequest({ answered: () => true, readOnly: false }, () => db.query('SELECT 2 AS two'));
  await sleep(300);
  dependencies.markDown('postgres', 'frozen (test)');
  await sleep(1000);
  let settled = false;
  void Promise.allSettled([background, afterAnswer]).then(() => (settled = true));
  await sleep(100);
  expect(settled).toBe(false); // still waiting for the server
  thawNow();
  expect((await background).rows).toEqual([{ one: 1 }]);
  expect((await afterAnswer).rows).toEqual([{ two: 2 }]);
});

test('while it is down, a request fails at once, sends nothing, and the pool serves again once it is back', async () => {
  dependencies.markDown('postgres', 'down (test)');
  const refused = await runInDatabaseRequest(write(), () => outcome(db.query('INSERT INTO released_rows (id) VALUES ($1)', ['while-down'])));
  expect(refused).toEqual({ statusCode: 503, message: POSTGRES_NOT_ANSWERING, details: undefined });
  dependencies.markUp('postgres');
  await runInDatabaseRequest(write(), () => db.query('INSERT INTO released_rows (id) VALUES ($1)', ['once-back']));
  expect([await rows('while-down'), await rows('once-back')]).toEqual([0, 1]);
});
