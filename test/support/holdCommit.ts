/**
 * Holds the COMMIT of chosen inserts, so a fault test can act while a transaction sits in its COMMIT (end its
 * session, kill the API) at a certain moment: a deferred constraint trigger sleeps at COMMIT for each row of `table`
 * whose `column` starts with HOLD (HOLD-LONG: 60 s, else 3 s). In the stack's own database (startTestStack's).
 */
import type { Queryable } from '../../lib/db/pool';

export async function holdCommitsOf(db: Queryable, targets: { table: string; column: string }[]): Promise<void> {
  const column = targets[0]?.column ?? 'title';
  if (targets.some((t) => t.column !== column)) throw new Error('holdCommitsOf: one column name for every table');
  await db.query(`
    CREATE FUNCTION test_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_sleep(CASE WHEN NEW.${column} LIKE 'HOLD-LONG%' THEN 60 ELSE 3 END);
      RETURN NULL;
    END $$;`);
  for (const t of targets) {
    await db.query(`
      CREATE CONSTRAINT TRIGGER test_hold_commit AFTER INSERT ON ${t.table} DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.${t.column} LIKE 'HOLD%') EXECUTE FUNCTION test_hold_commit();`);
  }
}
