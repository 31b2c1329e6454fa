/**
 * Reading log rows for the HTTP/WS/SSE streams: a snapshot, then (follow) the rows the log feed announces
 * (lib/events/logFeed.ts: NOTIFY-driven, one reader per API process), by per-process seq until the owner is
 * finished. Cursors are seqs, so a stream resumes exactly on any replica (Last-Event-ID, `after`).
 */
import type { Queryable } from '../db/pool';
import { readLogPage, readLogs, type LogLevel, type LogRow } from '../db/processes';
import type { LogFeed, LogNote } from '../events/logFeed';

const ORDER: LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** `level` as a minimum: info → info, warn, error. */
export function levelsFrom(min: LogLevel | undefined): LogLevel[] | undefined {
  if (!min) return undefined;
  return ORDER.slice(ORDER.indexOf(min));
}

export interface LogLine {
  seq: number;
  processId: string;
  attemptId: string;
  level: LogLevel;
  message: string;
  timestamp: string;
  source: string;
  metadata: Record<string, unknown>;
}

export function logLine(r: LogRow): LogLine {
  return { seq: r.seq, processId: r.process_id, attemptId: r.attempt_id, level: r.level, message: r.message, timestamp: r.ts.toISOString(), source: r.source, metadata: r.metadata };
}

export interface LogStreamOptions {
  /** the processes to read (re-evaluated at the start and whenever the feed says they may have changed: follow-ups add processes) */
  processes(): Promise<string[]>;
  /** true once no more lines can come */
  finished(): Promise<boolean>;
  follow: boolean;
  /** with follow: this API process's log feed, and the event topics that may end the stream or add processes */
  feed?: LogFeed;
  topics?: string[];
  /** with follow: a log notification of a process not read yet that may belong to this stream */
  discover?: (note: LogNote) => boolean;
  levels?: LogLevel[];
  since?: Date;
  /** only for one process: the last n lines first */
  tail?: number;
  /** resume: seqs already delivered per process */
  after?: Record<string, number>;
  signal?: AbortSignal;
}

/**
 * The log rows of `processes()`, in batches ordered by time, each process's rows in seq order. Without follow: what is stored now. With follow: then
 * every new row as the feed announces it (no polling), until `finished()` and everything stored has been read.
 */
export async function* streamLogRows(db: Queryable, o: LogStreamOptions): AsyncGenerator<LogRow[]> {
  const last: Record<string, number> = { ...(o.after ?? {}) };
  if (!o.follow) {
    const ids = await o.processes();
    // the last n lines (a resume with `after` reads on from there instead: every line after it)
    if (o.tail !== undefined && ids.every((id) => last[id] === undefined)) {
      const lists: LogRow[][] = [];
      for (const id of ids) lists.push(await readLogs(db, { processIds: [id], since: o.since, levels: o.levels, tail: o.tail }));
      const batch = mergeByTime(lists);
      if (batch.length) yield batch;
    } else yield* storedRows(db, ids, last, o);
    return;
  }
  if (!o.feed) throw new Error('streamLogRows: follow needs the log feed');
  const follower = o.feed.follow({ topics: o.topics ?? [], discover: o.discover });
  try {
    let ids: string[] = [];
    let rescan = true;
    for (;;) {
      if (o.signal?.aborted) return;
      let finishedBefore = false;
      if (rescan) {
        // in this order: lines written before the owner finished are all stored once it has
        finishedBefore = await o.finished();
        ids = await o.processes();
        follower.track(ids);
      }
      const lists: LogRow[][] = [];
      for (const id of ids) {
        const { rows, upTo } = await follower.rowsAfter(id, last[id], { levels: o.levels, since: o.since, tail: o.tail, fresh: finishedBefore });
        if (upTo !== undefined) last[id] = upTo;
        lists.push(rows);
      }
      const batch = mergeByTime(lists);
      if (batch.length) yield batch;
      if (finishedBefore && batch.length === 0) return;
      // more may be stored right behind a full read; otherwise wait for the feed
      rescan = batch.length || finishedBefore ? finishedBefore : await follower.next(o.signal);
    }
  } finally {
    follower.close();
  }
}

const byTime = (a: LogRow, b: LogRow) => a.ts.getTime() - b.ts.getTime() || a.seq - b.seq;

/**
 * The rows of several processes, each list in seq order, merged by time with each process's rows kept in seq order.
 * A sort by time of them all put a line whose time went back (a clock step, a retry's note) before lines of its own
 * process that it followed: a follower then got seqs out of order, and one resuming after the last seq it held skipped
 * the lower ones.
 */
function mergeByTime(lists: LogRow[][]): LogRow[] {
  if (lists.length <= 1) return lists[0] ?? [];
  const at = lists.map(() => 0);
  const out: LogRow[] = [];
  for (;;) {
    let best = -1;
    for (let k = 0; k < lists.length; k++) {
      const r = (lists[k] as LogRow[])[at[k] as number];
      if (r && (best < 0 || byTime(r, (lists[best] as LogRow[])[at[best] as number] as LogRow) < 0)) best = k;
    }
    if (best < 0) return out;
    out.push((lists[best] as LogRow[])[(at[best] as number)++] as LogRow);
  }
}

/** Rows read from PostgreSQL at a time, per process, by a read of every stored line. */
const STORED_PAGE = 10_000;

/**
 * Every stored row of `ids` after `after`, in batches of at most STORED_PAGE, merged in time order across the processes
 * (each process in seq order). Each process is read a page at a time, the next page only once its rows are handed
 * on, so a log of any length is read whole with at most one page per process in memory. Before, such a read stopped
 * at its first 10,000 lines per process, without a word.
 */
async function* storedRows(db: Queryable, ids: string[], after: Record<string, number>, o: LogStreamOptions): AsyncGenerator<LogRow[]> {
  const cursors = ids.map((id) => ({ id, after: after[id] ?? 0, rows: [] as LogRow[], at: 0, more: true }));
  const head = async (c: (typeof cursors)[number]): Promise<LogRow | undefined> => {
    if (c.at === c.rows.length && c.more) {
      c.rows = await readLogPage(db, c.id, c.after, { since: o.since, levels: o.levels }, STORED_PAGE);
      c.at = 0;
      c.more = c.rows.length === STORED_PAGE;
      const lastRow = c.rows[c.rows.length - 1];
      if (lastRow) c.after = lastRow.seq;
    }
    return c.rows[c.at];
  };
  for (;;) {
    const batch: LogRow[] = [];
    while (batch.length < STORED_PAGE) {
      let next: (typeof cursors)[number] | undefined;
      let nextRow: LogRow | undefined;
      for (const c of cursors) {
        const r = await head(c);
        if (r && (!nextRow || byTime(r, nextRow) < 0)) [next, nextRow] = [c, r];
      }
      if (!next || !nextRow) break;
      batch.push(nextRow);
      next.at++;
    }
    if (batch.length) yield batch;
    if (batch.length < STORED_PAGE || o.signal?.aborted) return;
  }
}
