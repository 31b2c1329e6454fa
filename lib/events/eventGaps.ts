/**
 * The holes of an event listener's cursor: seqs below ones already delivered that have not been heard. A hole is a
 * transaction that took the seq and has not committed yet (it commits out of order, and is heard then), or one that
 * rolled back (the seq never commits). The prover tells them apart without a timer: it takes a horizon, the next
 * transaction id, after the holes were seen; once no transaction id below it is still running in this database
 * (lib/events/xidHorizon.ts), every hole seen before has committed or never will. It reads what committed and settles the
 * rest, so the cursor's watermark moves past a rolled-back seq and resume tokens stay short.
 *
 * This holds because a transaction has its id before it takes a seq: migration 092 makes the seq's default take the
 * transaction id first. (The webhook dispatcher waits GAP_SETTLE_MS for the same reason; lib/webhooks/dispatcher.ts.)
 * A transaction that stays open holds its hole, and the holes seen after it, until it ends; delivery never waits.
 */
import type { Pool } from 'pg';
import type { Logger } from '../logger';
import { EventCursor } from './eventCursor';
import { readEventsOutside, type StoredEvent } from './publish';
import { endedBelowSql, HORIZON_SQL } from './xidHorizon';

/** The cursor at start covers every seq up to the newest; the holes among the last BOOT_WINDOW seqs are waited for. */
const BOOT_WINDOW = 10_000;
const FIRST_CHECK_MS = 100;
const MAX_CHECK_MS = 1000;
const READ_PAGE = 1000;

/** Holes seen up to `upTo` before `horizon` (an xid8, as text) was taken. */
interface Probe {
  horizon: string;
  upTo: number;
}

export interface GapProver {
  /** The cursor has holes (again): check them soon. */
  poke(): void;
  stop(): void;
}

/**
 * The cursor of a listener that starts now: every stored seq, and the holes among the newest BOOT_WINDOW (seqs
 * that may still commit) left open, with the probe that settles them. Holes further down are taken as final.
 */
export async function startingCursor(db: Pool): Promise<{ cursor: EventCursor; probe: Probe | undefined }> {
  const { rows } = await db.query<{ newest: string; horizon: string; gaps: Array<[number, number]> }>(
    `WITH top AS (SELECT coalesce(max(seq), 0) AS m FROM events),
          recent AS (SELECT seq, lag(seq, 1, (SELECT greatest(m - $1, 0) FROM top)) OVER (ORDER BY seq) AS prev
                       FROM events WHERE seq > (SELECT greatest(m - $1, 0) FROM top))
     SELECT (SELECT m FROM top)::text AS newest, ${HORIZON_SQL} AS horizon,
            coalesce((SELECT json_agg(json_build_array(prev + 1, seq - 1) ORDER BY seq) FROM recent WHERE seq > prev + 1), '[]') AS gaps`,
    [BOOT_WINDOW],
  );
  const row = rows[0] as { newest: string; horizon: string; gaps: Array<[number, number]> };
  const newest = Number(row.newest);
  let prev = Math.max(0, newest - BOOT_WINDOW);
  const cursor = EventCursor.upTo(prev);
  for (const [a, b] of row.gaps) {
    cursor.addRange(prev + 1, a - 1);
    prev = b;
  }
  cursor.addRange(prev + 1, newest);
  return { cursor, probe: cursor.hasGaps() ? { horizon: row.horizon, upTo: newest } : undefined };
}

export function createGapProver(
  db: Pool,
  logger: Logger,
  cursor: EventCursor,
  deliver: (e: StoredEvent) => void,
  initial?: Probe,
): GapProver {
  let probe = initial;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let stopped = false;
  let delay = FIRST_CHECK_MS;

  const check = async () => {
    if (probe && cursor.watermark >= probe.upTo) probe = undefined; // its holes were all heard
    if (!cursor.hasGaps()) return;
    const upTo = cursor.max(); // before the snapshot: every hole up to here was there when the horizon is taken
    // the next id now (the next probe's horizon), and whether the probe's holders have all ended (lib/events/xidHorizon.ts)
    const { rows } = probe
      ? await db.query<{ xmax: string; ended: boolean }>(`SELECT ${HORIZON_SQL} AS xmax, ${endedBelowSql('$1')} AS ended`, [probe.horizon])
      : await db.query<{ xmax: string; ended: boolean }>(`SELECT ${HORIZON_SQL} AS xmax, false AS ended`);
    const snap = rows[0] as { xmax: string; ended: boolean };
    if (probe && snap.ended) {
      // every transaction that held one of these holes has ended: what committed is read now, the rest never commits
      const settled = probe.upTo;
      for (;;) {
        const page = await readEventsOutside(db, cursor, { upTo: settled, limit: READ_PAGE });
        for (const e of page) deliver(e);
        if (page.length < READ_PAGE) break;
      }
      cursor.addRange(1, settled);
      probe = undefined;
    }
    if (!probe && cursor.hasGaps()) probe = { horizon: snap.xmax, upTo };
  };

  const schedule = () => {
    if (timer || running || stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = true;
      check()
        .catch((err) => logger.warn({ err: { message: (err as Error).message } }, 'event gap check failed; retrying'))
        .finally(() => {
          running = false;
          if (!cursor.hasGaps()) {
            delay = FIRST_CHECK_MS;
            return;
          }
          delay = Math.min(delay * 2, MAX_CHECK_MS);
          schedule();
        });
    }, delay);
    timer.unref();
  };
  if (cursor.hasGaps()) schedule();

  return {
    poke: schedule,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
