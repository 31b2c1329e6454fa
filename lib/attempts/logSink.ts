/**
 * The write side of live logs. Every agent run has a sink (its queue of parsed lines); all sinks of one database
 * pool (one worker process) share one writer, which stores the lines of every process with news in ONE multi-row
 * insert (one statement, one commit, one NOTIFY per process carrying its new rows: migrations 070 and 102), at most FLUSH_DELAY_MS after the
 * oldest waiting line arrived, or at once when a process has MAX_BATCH lines waiting. A worker running 50 chatty
 * agents makes at most ~40 inserts a second, not ~1,000 (one per process per 50 ms before).
 * Statements of a writer run one at a time, so each process's seqs follow its lines' order and what is committed is
 * always a prefix 1..n (what followers rely on to resume by seq).
 * A failed insert with several processes is retried once per process (so one process whose row is gone does not
 * hold back the others); a process's lines whose insert failed ATTEMPTS times are dropped with a warning.
 * While PostgreSQL cannot be reached (a restart, an outage), inserts are retried every RETRY_MS without limit and the
 * lines wait in memory, up to MAX_HELD_CHARS per run: an outage no longer loses the lines printed meanwhile. Past that
 * budget (during an outage, or a run printing faster than the inserts take its lines) the newest lines are left out
 * and one line in their place says how many.
 * An insert that failed with PostgreSQL unreachable may have committed all the same (killed or cut off between its
 * commit and the reply): before its lines are sent again, the process's last rows are compared with them, and lines
 * found stored are not sent twice (a soak's PostgreSQL kill stored lines 991-995 twice, after 996: followers read
 * them out of order).
 */
import { isPostgresUnavailable, type Queryable } from '../db/pool';
import { appendLogs, appendLogsOfProcesses, lastLogsAre, type LogEntry } from '../db/processes';
import type { Logger } from '../logger';

/** The longest a line waits for its insert (the writer's inserts serve every process of the worker, so a short delay costs
 * ~40 commits a second whatever the number of agents). */
export const FLUSH_DELAY_MS = 25;
/** Lines of one process per insert. */
export const MAX_BATCH = 500;
/** Lines of all processes per insert. */
const MAX_ROWS = 5000;
/**
 * Characters (message and raw) of all lines per insert, at least one line: 500 lines of the longest kind (1 Mi,
 * lib/process/lines.ts) would make a parameter past what a JavaScript string can hold, and fail every time.
 */
const MAX_ROUND_CHARS = 16 * 1024 * 1024;
/** A batch whose insert failed is retried this many times (then dropped with a warning: the process row is gone). */
const ATTEMPTS = 3;
const RETRY_MS = 500;
/**
 * The characters of one run's lines that may wait in memory while PostgreSQL is unreachable (UTF-16 units, ~2 bytes
 * each): 32 Mi, so a run printing
 * 200 lines of 100 characters a second is held for ~25 minutes of outage, and 200 runs on a worker never hold more
 * than a few GB even at the limit.
 */
export const MAX_HELD_CHARS = 32 * 1024 * 1024;

export interface LogSink {
  /** Lines were added to the queue: writes them within FLUSH_DELAY_MS, or now when MAX_BATCH are waiting. */
  poke(): void;
  /**
   * Writes everything queued so far; resolves once it is stored (or given up on). While PostgreSQL is unreachable it
   * waits for it, until `signal` aborts (the lines then stay queued, written once it is back).
   */
  flush(signal?: AbortSignal): Promise<void>;
  /** The run is over (call flush first to write what is left). */
  close(): void;
  /**
   * Takes `entry` back out of the queue when no insert has taken it yet; false when it is stored, on its way, or was
   * never queued.
   */
  withdraw(entry: LogEntry): boolean;
}

interface SinkState {
  processId: string;
  attemptId: string;
  queue: LogEntry[];
  logger: Logger;
  failures: number;
  /** after a failed insert: not written again before this time (the other processes' lines go on meanwhile) */
  retryAt: number;
  /** lines taken from the queue by the insert running now */
  inFlight: number;
  /** characters of the queued lines counted so far, and how many of the queue's entries (from the front) they are */
  heldChars: number;
  counted: number;
  /** lines left out since the budget was reached (a line says how many once there is room again) */
  leftOut: number;
  /** why the lines counted in leftOut were left out: PostgreSQL away, or the run printing faster than the inserts */
  leftOutWhy: 'outage' | 'rate';
  /** an outage was reported for this run (one warning per outage) */
  outage: boolean;
  /** MAX_HELD_CHARS unless the sink was made with another budget */
  maxHeldChars: number;
  /** the first `uncertain` queued lines went out in an insert whose outcome is unknown (it failed with PostgreSQL away) */
  uncertain: number;
}

const charsOf = (e: LogEntry) => e.message.length + (e.raw?.length ?? 0);

/**
 * Counts the entries the producer pushed since the last call, and keeps the run within its budget: over it, the newest
 * entries are left out — while PostgreSQL is unreachable, or while the run prints faster than the inserts take its
 * lines (an agent's tool printing without end: before session 41 its lines filled the worker's memory). Once they can
 * go in again, a line saying how many were left out goes before the new ones, or last when `final` (a flush: the run
 * may print nothing more). A run the inserts keep up with never reaches the budget, so nothing of it is left out.
 */
function admit(s: SinkState, final = false): void {
  const before = s.counted;
  for (; s.counted < s.queue.length; s.counted++) s.heldChars += charsOf(s.queue[s.counted] as LogEntry);
  if (s.heldChars > s.maxHeldChars) {
    if (!s.leftOut) s.leftOutWhy = s.outage ? 'outage' : 'rate';
    while (s.heldChars > s.maxHeldChars && s.queue.length > before) {
      s.heldChars -= charsOf(s.queue.pop() as LogEntry);
      s.counted--;
      s.leftOut++;
    }
    return;
  }
  if (s.leftOut && (before < s.queue.length || final)) {
    const at = Math.min(before, s.queue.length);
    const why =
      s.leftOutWhy === 'outage'
        ? `PostgreSQL was unavailable and the worker already held ${s.maxHeldChars} characters of this run's waiting lines`
        : `this run printed faster than its lines could be stored, and the worker already held ${s.maxHeldChars} characters of them`;
    const note: LogEntry = {
      level: 'warn',
      message: `${s.leftOut} line${s.leftOut === 1 ? '' : 's'} left out here: ${why}`,
      timestamp: s.queue[at]?.timestamp ?? new Date().toISOString(),
      source: 'armada',
    };
    s.queue.splice(at, 0, note);
    s.counted++;
    s.heldChars += charsOf(note);
    s.leftOut = 0;
  }
}

/** Entries left the queue (taken by an insert, or dropped): no longer held. */
function release(s: SinkState, entries: LogEntry[]): void {
  for (const e of entries) s.heldChars -= charsOf(e);
  s.counted = Math.max(0, s.counted - entries.length);
}

/** Entries went back to the front of the queue (their insert failed): held again. */
function requeue(s: SinkState, entries: LogEntry[]): void {
  s.queue.unshift(...entries);
  for (const e of entries) s.heldChars += charsOf(e);
  s.counted += entries.length;
}

/**
 * An insert failed because PostgreSQL is unreachable or short of a resource (its disk full): retried later without
 * counting, reported once per outage.
 */
function heldForOutage(s: SinkState, err: unknown): boolean {
  if (!isPostgresUnavailable(err)) return false;
  s.retryAt = Date.now() + RETRY_MS;
  if (!s.outage) {
    s.outage = true;
    s.logger.warn({ processId: s.processId, err: { message: (err as Error).message } }, 'PostgreSQL unavailable: log lines wait in memory until it is back');
  }
  return true;
}

interface Writer {
  db: Queryable;
  /** sinks with lines waiting (or in flight) */
  active: Set<SinkState>;
  timer: NodeJS.Timeout | undefined;
  /** when the oldest line not yet taken by an insert arrived */
  waitingSince: number | undefined;
  /** the insert running now */
  round: Promise<void> | undefined;
  /** after a failed combined insert: the next round writes each process on its own */
  isolate: boolean;
}

const writers = new WeakMap<Queryable, Writer>();

function writerFor(db: Queryable): Writer {
  let w = writers.get(db);
  if (!w) {
    w = { db, active: new Set(), timer: undefined, waitingSince: undefined, round: undefined, isolate: false };
    writers.set(db, w);
  }
  return w;
}

/** Starts an insert of everything due, unless one is running (its end schedules the next). */
function runRound(w: Writer): Promise<void> {
  if (w.timer) clearTimeout(w.timer);
  w.timer = undefined;
  if (w.round) return w.round;
  w.round = writeRound(w).finally(() => {
    w.round = undefined;
    schedule(w);
  });
  return w.round;
}

/** After lines arrived or an insert ended: the next insert now (a full batch, or the oldest line is due) or on a timer. */
function schedule(w: Writer): void {
  if (w.round) return; // its end schedules the next
  const now = Date.now();
  let waiting = false;
  let full = false;
  let retry = Number.POSITIVE_INFINITY;
  for (const x of w.active) {
    if (!x.queue.length) continue;
    if (x.retryAt > now) retry = Math.min(retry, x.retryAt);
    else {
      waiting = true;
      if (x.queue.length >= MAX_BATCH) full = true;
    }
  }
  if (!waiting) w.waitingSince = undefined;
  else w.waitingSince ??= now;
  const due = Math.min(waiting ? (w.waitingSince as number) + FLUSH_DELAY_MS : Number.POSITIVE_INFINITY, retry) - now;
  if (due === Number.POSITIVE_INFINITY) return;
  if (full || due <= 0) void runRound(w);
  else if (!w.timer) w.timer = setTimeout(() => void runRound(w), due);
}

/** `queue` is the array the producer pushes entries into; the sink takes them out from the front. */
export function createLogSink(o: { db: Queryable; processId: string; attemptId: string; queue: LogEntry[]; logger: Logger; maxHeldChars?: number }): LogSink {
  const w = writerFor(o.db);
  const s: SinkState = { processId: o.processId, attemptId: o.attemptId, queue: o.queue, logger: o.logger, failures: 0, retryAt: 0, inFlight: 0, heldChars: 0, counted: 0, leftOut: 0, leftOutWhy: 'outage', outage: false, maxHeldChars: o.maxHeldChars ?? MAX_HELD_CHARS, uncertain: 0 };
  return {
    poke() {
      admit(s);
      if (!s.queue.length) return;
      w.active.add(s);
      if (s.retryAt > Date.now()) return schedule(w);
      w.waitingSince ??= Date.now();
      if (w.round) return; // the running insert's end takes whatever arrives meanwhile
      schedule(w);
    },
    async flush(signal) {
      admit(s, true);
      // until this sink's lines queued so far (and any in flight) are written: other sinks' lines ride along
      while ((s.queue.length || s.inFlight) && !signal?.aborted) {
        w.active.add(s);
        const wait = s.retryAt - Date.now();
        if (wait > 0 && !s.inFlight) await new Promise((r) => setTimeout(r, wait));
        await runRound(w);
      }
    },
    close() {
      if (!s.queue.length && !s.inFlight) w.active.delete(s);
    },
    withdraw(entry) {
      const at = s.queue.indexOf(entry);
      // the first `uncertain` lines are compared with the stored rows as they are (settleUncertain)
      if (at < 0 || at < s.uncertain) return false;
      s.queue.splice(at, 1);
      if (at < s.counted) {
        s.counted--;
        s.heldChars -= charsOf(entry);
      }
      return true;
    },
  };
}

/**
 * Lines whose insert failed with PostgreSQL away, at the front of the queue: those found already stored (the insert had
 * committed) leave the queue; the others are sent again. False while PostgreSQL is still away (the sink waits).
 */
async function settleUncertain(db: Queryable, s: SinkState): Promise<boolean> {
  const entries = s.queue.slice(0, s.uncertain);
  try {
    if (await lastLogsAre(db, s.processId, entries)) {
      s.queue.splice(0, entries.length);
      release(s, entries);
    }
    s.uncertain = 0;
    return true;
  } catch (err) {
    if (!heldForOutage(s, err)) s.uncertain = 0; // not an outage: send them again (the insert says what is wrong)
    return s.uncertain === 0;
  }
}

/** One insert: up to MAX_BATCH lines of every sink with lines due (or one insert per process after a failure). */
async function writeRound(w: Writer): Promise<void> {
  const taken: { sink: SinkState; entries: LogEntry[] }[] = [];
  for (const sink of w.active) {
    if (sink.uncertain > 0 && sink.retryAt <= Date.now()) await settleUncertain(w.db, sink);
  }
  const now = Date.now();
  let rows = 0;
  let chars = 0;
  for (const sink of w.active) {
    if (!sink.queue.length) {
      w.active.delete(sink);
      continue;
    }
    if (sink.retryAt > now) continue;
    if (rows >= MAX_ROWS || chars >= MAX_ROUND_CHARS) break;
    admit(sink);
    let n = 0;
    for (const most = Math.min(MAX_BATCH, MAX_ROWS - rows, sink.queue.length); n < most; n++) {
      const c = charsOf(sink.queue[n] as LogEntry);
      if (rows + n > 0 && chars + c > MAX_ROUND_CHARS) break;
      chars += c;
    }
    if (n === 0) break;
    const entries = sink.queue.splice(0, n);
    release(sink, entries);
    sink.inFlight = entries.length;
    rows += entries.length;
    taken.push({ sink, entries });
  }
  // lines arriving from now on wait for the next round; lines left behind (a full batch) keep their age
  if (![...w.active].some((x) => x.queue.length && x.retryAt <= now)) w.waitingSince = undefined;
  if (!taken.length) return;
  try {
    if (taken.length > 1 && !w.isolate) {
      try {
        await appendLogsOfProcesses(
          w.db,
          taken.map((t) => ({ processId: t.sink.processId, attemptId: t.sink.attemptId, entries: t.entries })),
        );
        for (const t of taken) {
          t.sink.failures = 0;
          t.sink.outage = false;
        }
        return;
      } catch (err) {
        for (const t of taken) requeue(t.sink, t.entries);
        // PostgreSQL is away: every process waits for it alike (and the insert may have committed before it went)
        if (isPostgresUnavailable(err)) {
          for (const t of taken) {
            heldForOutage(t.sink, err);
            t.sink.uncertain = t.entries.length;
          }
        }
        // else one process's row may be gone (a foreign key): write each on its own, at once, to find out which
        else w.isolate = true;
        return;
      }
    }
    w.isolate = false;
    for (const t of taken) {
      try {
        await appendLogs(w.db, t.sink.processId, t.sink.attemptId, t.entries);
        t.sink.failures = 0;
        t.sink.outage = false;
      } catch (err) {
        if (heldForOutage(t.sink, err)) {
          requeue(t.sink, t.entries);
          t.sink.uncertain = t.entries.length; // it may have committed before PostgreSQL went
          continue;
        }
        if (++t.sink.failures >= ATTEMPTS) {
          t.sink.logger.warn({ err: { message: (err as Error).message }, processId: t.sink.processId, lines: t.entries.length }, 'log lines dropped after failed inserts');
          t.sink.failures = 0;
          continue;
        }
        requeue(t.sink, t.entries); // keep the order: retried before anything newer
        t.sink.retryAt = Date.now() + RETRY_MS;
      }
    }
  } finally {
    for (const t of taken) t.sink.inFlight = 0;
  }
}
