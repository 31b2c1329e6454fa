/**
 * Whether the transactions that may still hold a seq of the outbox have all ended, for the event listener's gap prover
 * (lib/events/eventGaps.ts) and the webhook dispatcher (lib/webhooks/dispatcher.ts). A horizon is the next transaction
 * id when the gaps were seen (`HORIZON_SQL`, an xid8 as text); a transaction that takes a seq has its id first
 * (migration 092), so once no transaction with an id below the horizon is running, a missing seq has committed or
 * never will.
 *
 * "Running" is asked of this database only: pg_current_snapshot()'s xmin is the whole server's, so a long transaction
 * in another database of the same PostgreSQL (a report, an idle session of another application, another test's
 * database on a shared server) held every rolled-back seq's gap open as long as it ran, and the events or webhooks
 * after it waited with it. The snapshot's xmin is still the quick answer when it is past the horizon. The transactions
 * of this database are read from pg_stat_activity, which shows a session's transaction id to its own role: the outbox
 * is written by Armada's role only.
 */
import type { Queryable } from '../db/pool';

/** The next transaction id now, as text (an xid8). */
export const HORIZON_SQL = 'pg_snapshot_xmax(pg_current_snapshot())::text';

/**
 * SQL, true when every transaction of this database with an id below the horizon `param` (a placeholder holding an
 * xid8 as text) has ended. An id's age is its distance below the next id, so an id below the horizon is older than it.
 */
export const endedBelowSql = (param: string): string =>
  `(pg_snapshot_xmin(pg_current_snapshot()) >= ${param}::xid8
    OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                    WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL
                      AND age(a.backend_xid) > age(((${param}::xid8)::text::numeric % 4294967296)::text::xid)))`;

/** Whether every transaction of this database with an id below `horizon` has ended (see endedBelowSql). */
export async function endedBelow(db: Queryable, horizon: string): Promise<boolean> {
  const { rows } = await db.query<{ done: boolean }>(`SELECT ${endedBelowSql('$1')} AS done`, [horizon]);
  return rows[0]?.done === true;
}
