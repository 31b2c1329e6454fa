import { Client } from 'pg';
import { createEventListener } from '../../lib/events/listener';
import { publishEvent, publishEvents, readEventsAfter, type StoredEvent } from '../../lib/events/publish';
import { withTransaction } from '../../lib/db/pool';
import { createTestDatabase, eventually, logger } from '../support/harness';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

describe('event bus (outbox + LISTEN/NOTIFY)', () => {
  test('subscribers get committed events by topic, in order; large events travel by seq; rollbacks publish nothing', async () => {
    const listener = await createEventListener(database.url, database.pool, logger);
    const seen: StoredEvent[] = [];
    const all: StoredEvent[] = [];
    listener.subscribe(['task:a'], (e) => seen.push(e));
    listener.subscribe([], (e) => all.push(e));
    await publishEvent(database.pool, { type: 'task.created', topics: ['task:a'], data: { n: 1 } });
    await publishEvent(database.pool, { type: 'task.created', topics: ['task:b'], data: { n: 2 } });
    await publishEvent(database.pool, { type: 'big', topics: ['task:a'], data: { text: 'x'.repeat(20_000) } });
    await withTransaction(database.pool, async (c) => {
      await publishEvent(c, { type: 'in-tx', topics: ['task:a'], data: {} });
    });
    await expect(
      withTransaction(database.pool, async (c) => {
        await publishEvent(c, { type: 'rolled-back', topics: ['task:a'], data: {} });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    await publishEvent(database.pool, { type: 'last', topics: ['task:a'], data: {} });
    await eventually(async () => seen.length === 4);
    expect(seen.map((e) => e.type)).toEqual(['task.created', 'big', 'in-tx', 'last']);
    expect(String(seen[1]?.data.text).length).toBe(20_000);
    expect(all.map((e) => e.type)).toEqual(['task.created', 'task.created', 'big', 'in-tx', 'last']);
    expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((a, b) => a - b));
    const after = await readEventsAfter(database.pool, all[0]?.seq ?? 0, { topics: ['task:b'] });
    expect(after.map((e) => e.data.n)).toEqual([2]);
    await listener.close();
  });

  test('several events in one statement keep their order; multi-byte text over the NOTIFY limit travels by seq', async () => {
    const listener = await createEventListener(database.url, database.pool, logger);
    const seen: StoredEvent[] = [];
    listener.subscribe(['multi'], (e) => seen.push(e));
    // 3,000 three-byte characters: 3,000 UTF-16 units but 9,000 bytes, over pg_notify's 8,000-byte payload limit
    const wide = '\u65e5'.repeat(3000);
    const stored = await publishEvents(database.pool, [
      { type: 'one', topics: ['multi'], data: { i: 1 } },
      { type: 'two', topics: ['multi', 'other'], data: { text: wide } },
      { type: 'three', topics: ['multi'], data: { i: 3 } },
    ]);
    expect(stored.map((e) => e.type)).toEqual(['one', 'two', 'three']);
    expect(stored[1]?.seq).toBe((stored[0]?.seq ?? 0) + 1);
    expect(stored[2]?.seq).toBe((stored[1]?.seq ?? 0) + 1);
    await eventually(async () => seen.length === 3);
    expect(seen.map((e) => [e.type, e.seq, e.topics])).toEqual(stored.map((e) => [e.type, e.seq, e.topics]));
    expect(seen[1]?.data.text).toBe(wide);
    expect(seen[0]?.createdAt).toBe(stored[0]?.createdAt);
    expect(await publishEvents(database.pool, [])).toEqual([]);
    await listener.close();
  });

  test('events whose transactions commit out of seq order are all delivered', async () => {
    const listener = await createEventListener(database.url, database.pool, logger);
    const seen: string[] = [];
    listener.subscribe(['order'], (e) => seen.push(e.type));
    const first = await database.pool.connect();
    await first.query('BEGIN');
    await publishEvent(first, { type: 'early-seq-late-commit', topics: ['order'], data: {} });
    await publishEvent(database.pool, { type: 'late-seq-early-commit', topics: ['order'], data: {} });
    await eventually(async () => seen.includes('late-seq-early-commit'));
    await first.query('COMMIT');
    first.release();
    await eventually(async () => seen.includes('early-seq-late-commit'));
    expect(seen).toEqual(['late-seq-early-commit', 'early-seq-late-commit']);
    await listener.close();
  });

  test('an out-of-order commit makes the catch-up read only what follows the delivered prefix, not the whole window', async () => {
    // a pool whose event reads are counted (the listener reads the events table through it)
    let rowsRead = 0;
    const counting = Object.create(database.pool) as typeof database.pool;
    counting.query = (async (...args: Parameters<typeof database.pool.query>) => {
      const r = await (database.pool.query as (...a: unknown[]) => Promise<{ rows: unknown[]; rowCount: number }>)(...args);
      if (String(args[0]).includes('FROM events WHERE seq >')) rowsRead += r.rows.length;
      return r;
    }) as typeof database.pool.query;
    const listener = await createEventListener(database.url, counting, logger);
    const seen: number[] = [];
    listener.subscribe(['window'], (e) => seen.push(e.data.n as number));
    for (let n = 1; n <= 300; n++) await publishEvent(database.pool, { type: 'filler', topics: ['window'], data: { n } });
    await eventually(async () => seen.length === 300);
    for (let round = 0; round < 5; round++) {
      const first = await database.pool.connect();
      await first.query('BEGIN');
      await publishEvent(first, { type: 'early-seq-late-commit', topics: ['window'], data: { n: 1000 + round * 2 } });
      await publishEvent(database.pool, { type: 'late-seq-early-commit', topics: ['window'], data: { n: 1001 + round * 2 } });
      await eventually(async () => seen.includes(1001 + round * 2));
      await first.query('COMMIT');
      first.release();
      await eventually(async () => seen.includes(1000 + round * 2));
    }
    expect(seen.length).toBe(310);
    expect(new Set(seen).size).toBe(310);
    // each gap reads from the first undelivered seq: a few rows per round, not the 300 delivered before
    expect(rowsRead).toBeLessThan(30);
    await listener.close();
  });

  test("a seq that commits after a higher one is a hole of the listener's cursor while its transaction is open; it is delivered when it commits, a rolled-back one settled", async () => {
    const listener = await createEventListener(database.url, database.pool, logger);
    const seen: number[] = [];
    listener.subscribe(['holes'], (e) => seen.push(e.seq));
    const held = await database.pool.connect();
    await held.query('BEGIN');
    const n = (await publishEvent(held, { type: 'held', topics: ['holes'], data: {} })).seq;
    const doomed = await database.pool.connect();
    await doomed.query('BEGIN');
    const m = (await publishEvent(doomed, { type: 'rolled-back', topics: ['holes'], data: {} })).seq;
    const top = (await publishEvent(database.pool, { type: 'top', topics: ['holes'], data: {} })).seq;
    expect([m, top]).toEqual([n + 1, n + 2]);
    await eventually(async () => seen.includes(top));
    // while both transactions are open, neither seq is taken as delivered or final, however long it takes
    await new Promise((r) => setTimeout(r, 1500));
    expect([n, m, top].map((s) => listener.cursor().has(s))).toEqual([false, false, true]);
    expect([listener.token(), listener.lastSeq()]).toEqual([`${n - 1}:${top}`, top]);
    await doomed.query('ROLLBACK');
    doomed.release();
    await held.query('COMMIT');
    held.release();
    await eventually(async () => listener.token() === String(top));
    expect(seen).toEqual([top, n]);
    await listener.close();
  });

  test("a long transaction in another database of the same server does not hold a rolled-back seq's hole open", async () => {
    // another application's (or another test's) database on the same PostgreSQL, with a transaction that has an id
    const other = await createTestDatabase();
    const elsewhere = await other.pool.connect();
    let listener: Awaited<ReturnType<typeof createEventListener>> | undefined;
    try {
      await elsewhere.query('BEGIN');
      const heldXid = (await elsewhere.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]?.xid;
      const opened = await createEventListener(database.url, database.pool, logger);
      listener = opened;
      const seen: number[] = [];
      opened.subscribe(['elsewhere'], (e) => seen.push(e.seq));
      const doomed = await database.pool.connect();
      await doomed.query('BEGIN');
      const m = (await publishEvent(doomed, { type: 'rolled-back', topics: ['elsewhere'], data: {} })).seq;
      const top = (await publishEvent(database.pool, { type: 'top', topics: ['elsewhere'], data: {} })).seq;
      await eventually(async () => seen.includes(top));
      await doomed.query('ROLLBACK');
      doomed.release();
      // settled while the other database's transaction is still open (the server-wide xmin is held by it)
      const xmin = (await database.pool.query<{ xmin: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin')).rows[0]?.xmin;
      await eventually(async () => opened.token() === String(top));
      expect(opened.cursor().has(m)).toBe(true);
      // the horizon was held back by the open transaction (or by an older one of another test on the shared server:
      // ci56a saw xmin one below it), so the hole was settled without waiting for the horizon to pass it
      const stillOpen = (await elsewhere.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]?.xid;
      expect(stillOpen).toBe(heldXid); // the same transaction, still open
      expect(BigInt(xmin as string)).toBeLessThanOrEqual(BigInt(stillOpen as string));
      expect(seen).toEqual([top]);
    } finally {
      // closed also after a failed expectation: a listener left reconnecting fails the next file in this worker
      await listener?.close();
      await elsewhere.query('ROLLBACK').catch(() => undefined);
      elsewhere.release();
      await other.drop();
    }
  });

  test('a listener that starts while a seq below the newest is held leaves it open: delivered when it commits; one rolled back is settled', async () => {
    const held = await database.pool.connect();
    await held.query('BEGIN');
    const n = (await publishEvent(held, { type: 'held', topics: ['start'], data: {} })).seq;
    const doomed = await database.pool.connect();
    await doomed.query('BEGIN');
    const m = (await publishEvent(doomed, { type: 'rolled-back', topics: ['start'], data: {} })).seq;
    const top = (await publishEvent(database.pool, { type: 'top', topics: ['start'], data: {} })).seq;
    const listener = await createEventListener(database.url, database.pool, logger);
    const seen: string[] = [];
    listener.subscribe(['start'], (e) => seen.push(e.type));
    expect([n, m, top].map((s) => listener.cursor().has(s))).toEqual([false, false, true]);
    await doomed.query('ROLLBACK');
    doomed.release();
    await held.query('COMMIT');
    held.release();
    await eventually(async () => listener.token() === String(top));
    expect(seen).toEqual(['held']);
    await listener.close();
  });

  test('a listener whose connection is killed reconnects and catches up on what it missed', async () => {
    const listener = await createEventListener(database.url, database.pool, logger);
    const seen: string[] = [];
    listener.subscribe([], (e) => seen.push(e.type));
    // terminate the LISTEN connection from the server side, then publish while it is down
    await database.pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database()`);
    await publishEvent(database.pool, { type: 'while-down', topics: [], data: {} });
    await eventually(async () => seen.includes('while-down'), 15_000);
    await publishEvent(database.pool, { type: 'after', topics: [], data: {} });
    await eventually(async () => seen.includes('after'), 15_000);
    expect(seen.filter((t) => t === 'while-down')).toHaveLength(1);
    await listener.close();
  });

  test('the LISTEN connection never has two queries on the wire (pg deprecates queueing them): watches and barriers at once', async () => {
    // counts the queries sent to a pg client while another of its queries is still running (what pg warns about)
    const proto = Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
    const original = proto.query;
    let overlapping = 0;
    proto.query = function (this: { _activeQuery: unknown; _queryQueue: unknown[] }, ...a: unknown[]) {
      if (this._activeQuery || this._queryQueue.length) overlapping++;
      return original.apply(this, a);
    };
    const listener = await createEventListener(database.url, database.pool, logger);
    try {
      const channels = ['armada_test_a', 'armada_test_b', 'armada_test_c'];
      const unwatch = channels.map((ch) => listener.watch(ch, () => undefined));
      expect(await Promise.all([listener.barrier(), listener.barrier(), listener.barrier()])).toEqual([true, true, true]);
      await eventually(async () => channels.every((ch) => listener.hears(ch)), 5000, 20);
      for (const u of unwatch) u();
      expect(overlapping).toBe(0);
    } finally {
      proto.query = original;
      await listener.close();
    }
  });
});
