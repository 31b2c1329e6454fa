/**
 * Live log rows for every log follower of this API process (WebSocket, SSE, NDJSON). Nobody polls per follower:
 *  - every insert into process_logs sends `NOTIFY armada_logs {p, a, s, r}` (migrations 070 and 102: the process, its
 *    attempt, the new high-water mark and the new rows as far as they fit in the payload), heard on the process's one
 *    LISTEN connection (lib/events/listener.ts);
 *  - one feed per followed process takes the rows a notification carries when they continue what it has read, and
 *    otherwise (rows left out of the payload, a gap) reads the new rows by seq range, for all processes with news in
 *    ONE query (`seq > what this feed has read`); it keeps the last rows in a small buffer and wakes its followers,
 *    who take their rows from that buffer (or from the database when they are further behind, e.g. on resume);
 *  - a missed notification (listener reconnect) re-reads every feed, and a slow safety re-check (SAFETY_MS, one
 *    query per API process for all followed processes, not per follower) catches anything else: a feed behind
 *    the table is re-read, a process or attempt whose status moved (or is seen for the first time) wakes its
 *    followers to re-check their end.
 * Seqs of one process are written by one writer in order, so what is committed is always a prefix 1..n: reading
 * `seq > last` is exact, and a follower's cursor (Last-Event-ID, `after`) resumes exactly on any replica.
 */
import type { Pool } from 'pg';
import { compactLogRow, readLogs, readNewRows, type LogLevel, type LogRow } from '../db/processes';
import type { Logger } from '../logger';
import type { EventListener } from './listener';
import type { StoredEvent } from './publish';

export const LOGS_CHANNEL = 'armada_logs';
/** How often the shared safety re-check runs. */
export const SAFETY_MS = 5000;
/**
 * At most this many rows are kept per followed process (2.5 s of a chatty agent's 200 lines/s), for a follower that
 * is a little behind; one further behind reads the database. Rows every follower of the process has taken are let go
 * at once (`release`), so a buffer holds more only while a follower lags: rows kept for seconds outlived two young
 * collections, were copied by each and then promoted, and the API's old space grew by every line it sent (its GCs
 * lined up with the bursts of bench/logs.ts's tail, docs/benchmarks.md "Session 55"). 2,000 before session 24.
 */
const BUFFER_ROWS = 500;
/** Rows per process per read. */
const READ_LIMIT = 1000;

/** A notification: process `p` of attempt `a` has rows up to seq `s`. */
export interface LogNote {
  processId: string;
  attemptId: string;
  seq: number;
}

export interface RowFilter {
  levels?: LogLevel[];
  since?: Date;
  /** only with no cursor: the last n rows */
  tail?: number;
  /** read from the database, not the buffer (the final read after the owner finished) */
  fresh?: boolean;
}

export interface LogFollower {
  /** The processes this follower reads (replaces the previous set). */
  track(processIds: string[]): void;
  /** Rows of `processId` after `afterSeq`, and the seq up to which this answer is complete. */
  rowsAfter(processId: string, afterSeq: number | undefined, filter: RowFilter): Promise<{ rows: LogRow[]; upTo: number | undefined }>;
  /** Resolves once something may have changed since the last call: true when the follower should re-check which processes it reads and whether they ended. */
  next(signal?: AbortSignal): Promise<boolean>;
  close(): void;
}

export interface FollowOptions {
  /** events that may end the stream or add processes (e.g. `process:<id>`, `attempt:<id>`, `task:<id>`) */
  topics: string[];
  /** a notification of a process not tracked yet: true when it may belong to this follower */
  discover?: (note: LogNote) => boolean;
}

export interface LogFeed {
  follow(o: FollowOptions): LogFollower;
  close(): void;
}

interface Follower {
  wake(rescan: boolean): void;
  discover?: (note: LogNote) => boolean;
  tracked: Set<string>;
  /** per process: the seq up to which this follower has taken rows from the feed's buffer */
  taken: Map<string, number>;
}

interface Feed {
  processId: string;
  /** highest seq read, -1 until the first read */
  readUpTo: number;
  /** rows (base, readUpTo] are in `rows` */
  base: number;
  rows: LogRow[];
  /** highest seq notified */
  wanted: number;
  /** process and attempt status at the last safety check */
  status: string | undefined;
  followers: Set<Follower>;
}

/** A row as a notification carries it: [seq, level, message, source, raw (null: the message), metadata (null: {}), ts in epoch ms]. */
type NoteRow = [number, LogLevel, string, string, string | null, Record<string, unknown> | null, number];

/** Events that do not change whether a stream ends or which processes it reads. */
const QUIET_EVENTS = new Set(['process_progress']);

export function createLogFeed(db: Pool, events: EventListener, logger: Logger): LogFeed {
  const log = logger.child({ component: 'log-feed' });
  const feeds = new Map<string, Feed>();
  const followers = new Set<Follower>();
  const dirty = new Set<Feed>();
  let pumping = false;

  const wakeAll = (f: Feed, rescan: boolean) => {
    for (const x of f.followers) x.wake(rescan);
  };
  /** Rows following the feed's readUpTo, in seq order: buffered, and the followers woken. */
  const append = (f: Feed, got: LogRow[]) => {
    f.rows.push(...got);
    f.readUpTo = (got.at(-1) as LogRow).seq;
    if (f.rows.length > BUFFER_ROWS) {
      const cut = f.rows.splice(0, f.rows.length - BUFFER_ROWS);
      f.base = (cut.at(-1) as LogRow).seq;
    }
    wakeAll(f, false);
  };
  /** Lets go of the rows every follower of `f` that reads from the buffer has taken (one catching up from the database does not hold them). */
  const release = (f: Feed) => {
    let upTo = Number.POSITIVE_INFINITY;
    for (const y of f.followers) {
      const t = y.taken.get(f.processId);
      if (t !== undefined && t < upTo) upTo = t;
    }
    if (upTo === Number.POSITIVE_INFINITY) return;
    const cut = firstAfter(f.rows, upTo);
    if (!cut) return;
    f.base = (f.rows[cut - 1] as LogRow).seq;
    f.rows.splice(0, cut);
  };

  /** Reads the new rows of every dirty feed: one query for all of them, repeated while any has more. */
  const pump = async () => {
    if (pumping) return;
    pumping = true;
    try {
      while (dirty.size) {
        const batch = [...dirty].filter((f) => feeds.get(f.processId) === f);
        dirty.clear();
        if (!batch.length) continue;
        const fresh = batch.filter((f) => f.readUpTo < 0);
        if (fresh.length) {
          // a new feed starts at the log's current end; followers behind it read the database until they catch up
          const { rows } = await db.query<{ id: string; seq: number | null }>(
            'SELECT w.id, (SELECT max(seq) FROM process_logs l WHERE l.process_id = w.id) AS seq FROM unnest($1::text[]) AS w(id)',
            [fresh.map((f) => f.processId)],
          );
          for (const r of rows) {
            const f = feeds.get(r.id);
            if (!f || f.readUpTo >= 0) continue;
            f.readUpTo = r.seq ?? 0;
            f.base = f.readUpTo;
            if (f.wanted > f.readUpTo) dirty.add(f);
            wakeAll(f, false);
          }
        }
        const ready = batch.filter((f) => f.readUpTo >= 0 && f.wanted > f.readUpTo);
        if (!ready.length) continue;
        const rows = await readNewRows(db, ready.map((f) => f.processId), ready.map((f) => f.readUpTo), READ_LIMIT);
        const byProcess = new Map<string, LogRow[]>();
        for (const r of rows) {
          const list = byProcess.get(r.process_id);
          if (list) list.push(r);
          else byProcess.set(r.process_id, [r]);
        }
        for (const f of ready) {
          const page = byProcess.get(f.processId) ?? [];
          // rows a notification carried meanwhile are already in
          const got = page.filter((r) => r.seq > f.readUpTo);
          if (got.length) append(f, got);
          // a full page: there is more (a notification arriving meanwhile re-adds the feed itself)
          if (page.length === READ_LIMIT) dirty.add(f);
        }
      }
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'log feed read failed; the safety re-check retries');
    } finally {
      pumping = false;
    }
  };

  // the notifications of one commit (one per process it wrote to) arrive in one read of the LISTEN socket: the pump
  // starts after all of them, so it reads every process in one query instead of the first alone and the rest in a second
  let pumpScheduled = false;
  const markDirty = (f: Feed) => {
    dirty.add(f);
    if (pumping || pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(() => {
      pumpScheduled = false;
      void pump();
    });
  };

  const onNote = (payload: string | null) => {
    if (payload === null) {
      // the LISTEN connection was (re)established or lost: notifications may have been missed
      check();
      for (const x of followers) x.wake(true);
      return;
    }
    let note: LogNote;
    let carried: NoteRow[] | null | undefined;
    try {
      const m = JSON.parse(payload) as { p: string; a: string; s: number; r?: NoteRow[] | null };
      note = { processId: m.p, attemptId: m.a, seq: m.s };
      carried = m.r;
    } catch {
      return;
    }
    const f = feeds.get(note.processId);
    if (f) {
      f.wanted = Math.max(f.wanted, note.seq);
      if (carried && f.readUpTo >= 0) take(f, carried, note);
      if (note.seq > f.readUpTo) markDirty(f);
    }
    for (const x of followers) if (x.discover && !x.tracked.has(note.processId) && x.discover(note)) x.wake(true);
  };
  /**
   * The rows a notification carries (migration 102): taken when they continue what the feed has read, so the
   * followers get them without a read-back; otherwise (a gap: an earlier notification carried no rows) the pump reads.
   */
  const take = (f: Feed, carried: NoteRow[], note: LogNote) => {
    const first = carried[0];
    if (!first || first[0] > f.readUpTo + 1) return;
    const got: LogRow[] = [];
    for (const c of carried) {
      if (c[0] <= f.readUpTo) continue;
      got.push(compactLogRow(note.processId, note.attemptId, c[0], c[1], c[2], c[3], c[4], c[5], c[6]));
    }
    if (got.length) append(f, got);
  };
  /** The shared re-check: every followed process's high-water mark and status, in one query. */
  const check = () => {
    if (!feeds.size) return;
    const ids = [...feeds.keys()];
    db.query<{ id: string; status: string; attempt_status: string | null; seq: number | null }>(
      `SELECT p.id, p.status, a.status AS attempt_status, (SELECT max(seq) FROM process_logs l WHERE l.process_id = p.id) AS seq
         FROM processes p LEFT JOIN attempts a ON a.id = p.attempt_id WHERE p.id = ANY($1::text[])`,
      [ids],
    ).then(
      ({ rows }) => {
        const seen = new Set<string>();
        for (const r of rows) {
          seen.add(r.id);
          const f = feeds.get(r.id);
          if (!f) continue;
          const status = `${r.status}/${r.attempt_status}`;
          // seen for the first time, or moved: the followers re-check whether their stream ended, so an end whose
          // event was missed still ends the stream (before, a status first seen already final woke no one)
          if (f.status !== status) wakeAll(f, true);
          f.status = status;
          if ((r.seq ?? 0) > f.readUpTo) {
            f.wanted = Math.max(f.wanted, r.seq ?? 0);
            markDirty(f);
          }
        }
        // a deleted process: its followers find out when they re-check
        for (const id of ids) if (!seen.has(id)) wakeAll(feeds.get(id) as Feed, true);
      },
      (err) => log.warn({ err: { message: (err as Error).message } }, 'log feed safety check failed'),
    );
  };
  const safety = setInterval(check, SAFETY_MS);
  safety.unref();
  const unwatch = events.watch(LOGS_CHANNEL, onNote);

  const attach = (x: Follower, id: string) => {
    let f = feeds.get(id);
    if (!f) {
      f = { processId: id, readUpTo: -1, base: Number.POSITIVE_INFINITY, rows: [], wanted: 0, status: undefined, followers: new Set() };
      feeds.set(id, f);
      markDirty(f);
    }
    f.followers.add(x);
  };
  const detach = (x: Follower, id: string) => {
    const f = feeds.get(id);
    if (!f) return;
    f.followers.delete(x);
    x.taken.delete(id);
    if (!f.followers.size) {
      feeds.delete(id);
      dirty.delete(f);
    }
  };

  return {
    follow(o) {
      let woken = false;
      let rescan = false;
      let resolve: (() => void) | undefined;
      const x: Follower = {
        tracked: new Set(),
        taken: new Map(),
        discover: o.discover,
        wake(r) {
          woken = true;
          if (r) rescan = true;
          resolve?.();
        },
      };
      followers.add(x);
      const unsubscribe = o.topics.length
        ? events.subscribe(o.topics, (e: StoredEvent) => {
            if (!QUIET_EVENTS.has(e.type)) x.wake(true);
          })
        : () => undefined;
      return {
        track(ids) {
          const next = new Set(ids);
          for (const id of x.tracked) if (!next.has(id)) detach(x, id);
          for (const id of next) if (!x.tracked.has(id)) attach(x, id);
          x.tracked = next;
        },
        async rowsAfter(id, afterSeq, filter) {
          const f = feeds.get(id);
          const after = afterSeq ?? 0;
          const fromBuffer = f && !filter.fresh && (filter.tail === undefined || afterSeq !== undefined) && f.readUpTo >= 0 && after >= f.base;
          if (!fromBuffer) {
            // behind the buffer (or a read that must be fresh): this follower holds none of its rows meanwhile
            if (f && x.taken.delete(id)) release(f);
            const rows = await readLogs(db, { processIds: [id], afterSeq, since: filter.since, levels: filter.levels, tail: afterSeq === undefined ? filter.tail : undefined });
            return { rows, upTo: rows.at(-1)?.seq ?? afterSeq };
          }
          const upTo = f.readUpTo;
          if (after >= upTo) {
            x.taken.set(id, after);
            release(f);
            return { rows: [], upTo: Math.max(after, upTo) };
          }
          const rows = f.rows.slice(firstAfter(f.rows, after)).filter((r) => (!filter.levels || filter.levels.includes(r.level)) && (!filter.since || r.ts >= filter.since));
          x.taken.set(id, upTo);
          release(f);
          return { rows, upTo };
        },
        async next(signal) {
          if (!woken && !signal?.aborted) {
            await new Promise<void>((r) => {
              const onAbort = () => r();
              resolve = () => {
                signal?.removeEventListener('abort', onAbort);
                r();
              };
              signal?.addEventListener('abort', onAbort, { once: true });
            });
          }
          resolve = undefined;
          woken = false;
          const r = rescan;
          rescan = false;
          return r;
        },
        close() {
          unsubscribe();
          followers.delete(x);
          for (const id of x.tracked) detach(x, id);
          x.tracked.clear();
          resolve?.();
        },
      };
    },
    close() {
      clearInterval(safety);
      unwatch();
      for (const x of followers) x.wake(true);
      followers.clear();
      feeds.clear();
      dirty.clear();
    },
  };
}

/** Index of the first row with seq > after (rows ascending by seq). */
function firstAfter(rows: LogRow[], after: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((rows[mid] as LogRow).seq > after) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
