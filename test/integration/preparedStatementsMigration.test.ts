/**
 * A named (prepared) statement whose table gains a column while the process runs (a rolling upgrade runs `armada
 * migrate` before the old version stops) keeps working. PostgreSQL refuses such a statement on every connection that
 * prepared it ("cached plan must not change result type", SQLSTATE 0A000), so `attempt_start` (RETURNING *) would have
 * failed every start on those connections until the process restarted. The pool's client prepares it again: at once
 * outside a transaction, at its next use inside one. Real PostgreSQL.
 */
import { createPool, withTransaction } from '../../lib/db/pool';
import { createTestDatabase, logger } from '../support/harness';

let db: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query("CREATE TABLE shaped (id int PRIMARY KEY, a text); INSERT INTO shaped VALUES (1, 'one')");
});
afterAll(async () => db?.drop());

const select = { name: 'shaped_all', text: 'SELECT * FROM shaped WHERE id = $1', values: [1] };

test('outside a transaction: the statement runs on the same connection after a column is added', async () => {
  const pool = createPool(db.url, logger, { max: 1 }); // one connection: the one that prepared it
  try {
    expect((await pool.query(select)).rows).toEqual([{ id: 1, a: 'one' }]);
    await db.pool.query("ALTER TABLE shaped ADD COLUMN b text NOT NULL DEFAULT 'two'");
    expect((await pool.query(select)).rows).toEqual([{ id: 1, a: 'one', b: 'two' }]);
    expect((await pool.query(select)).rows).toEqual([{ id: 1, a: 'one', b: 'two' }]);
  } finally {
    await pool.end();
  }
});

test('inside a transaction: that transaction fails, the next use on the connection runs', async () => {
  const pool = createPool(db.url, logger, { max: 1 });
  try {
    expect((await pool.query(select)).rows).toHaveLength(1);
    await db.pool.query('ALTER TABLE shaped ADD COLUMN c int NOT NULL DEFAULT 3');
    await expect(withTransaction(pool, (c) => c.query(select))).rejects.toMatchObject({ code: '0A000' });
    const again = await withTransaction(pool, (c) => c.query(select));
    expect(again.rows).toEqual([{ id: 1, a: 'one', b: 'two', c: 3 }]);
  } finally {
    await pool.end();
  }
});
