/**
 * The write side of live logs. Every agent run has a sink (its queue of parsed lines); all sinks of one database
 * pool (one worker process) share one writer, which stores the lines of every process with news in ONE multi-row
 * insert (one statement, one commit, one NOTIFY per process: migration 070), at most FLUSH_DELAY_MS after the
 * oldest waiting line arrived, or at once when a process has MAX_BATCH lines waiting. A worker running 50 chatty
 * agents makes ~20 inserts a second, not ~1,000.
 * Statements of a writer run one at a time, so each process's seqs follow its lines' order and what is committed is
 * always a prefix 1..n (what followers rely on to resume by seq).
 * A failed insert with several processes is retried once per process (so one process whose row is gone does not
 * hold back the others); a process's lines whose insert failed ATTEMPTS times are dropped with a warning.
 */
import type { Queryable } from '../db/pool';
import { appendLogs, appendLogsOfProcesses, type LogEntry } from '../db/processes';
import type { Logger } from '../logger';

export const FLUSH_DELAY_MS = 50;
/** Lines of one process per insert. */
export const MAX_BATCH = 500;
/** Lines of all processes per insert. */
const MAX_ROWS = 5000;
/** A batch whose insert failed is retried this many times (then dropped with a warning: the process row is gone). */
const ATTEMPTS = 3;
const RETRY_MS = 500;

export interface LogSink {
  /** Lines were added to the queue: writes them within FLUSH_DELAY_MS, or now when MAX_BATCH are waiting. */
  poke(): void;
  /** Writes everything queued so far; resolves once it is stored (or given up on). */
  flush(): Promise<void>;
  /** The run is over (call flush first to write what is left). */
  close(): void;
}

interface SinkState {
  processId: string;
  attemptId: string;
  queue: LogEntry[];
  logger: Logger;
  failures: number;
  /** lines taken from the queue by the insert running now */
  inFlight: number;
}

interface Writer {
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
    w = { active: new Set(), timer: undefined, waitingSince: undefined, round: undefined, isolate: false };
    writers.set(db, w);
  }
  return w;
}

/** `queue` is the array the producer pushes entries into; the sink takes them out from the front. */
export function createLogSink(o: { db: Queryable; processId: string; attemptId: string; queue: LogEntry[]; logger: Logger }): LogSink {
  const w = writerFor(o.db);
  const s: SinkState = { processId: o.processId, attemptId: o.attemptId, queue: o.queue, logger: o.logger, failures: 0, inFlight: 0 };

  /** Starts an insert of everything waiting, unless one is running (its end schedules the next). */
  const runRound = (): Promise<void> => {
    if (w.timer) clearTimeout(w.timer);
    w.timer = undefined;
    if (w.round) return w.round;
    w.round = writeRound(o.db, w).finally(() => {
      w.round = undefined;
      schedule();
    });
    return w.round;
  };
  /** After lines arrived or an insert ended: the next insert now (a full batch, or the oldest line is due) or on a timer. */
  const schedule = () => {
    if (w.round) return; // its end schedules the next
    let waiting = false;
    let full = false;
    for (const x of w.active) {
      if (x.queue.length) waiting = true;
      if (x.queue.length >= MAX_BATCH) full = true;
    }
    if (!waiting) {
      w.waitingSince = undefined;
      return;
    }
    w.waitingSince ??= Date.now();
    const due = w.waitingSince + FLUSH_DELAY_MS - Date.now();
    if (full || due <= 0) void runRound();
    else if (!w.timer) w.timer = setTimeout(() => void runRound(), due);
  };

  return {
    poke() {
      if (!s.queue.length) return;
      w.active.add(s);
      w.waitingSince ??= Date.now();
      if (w.round) return; // the running insert's end takes whatever arrives meanwhile
      schedule();
    },
    async flush() {
      // until this sink's lines queued so far (and any in flight) are written: other sinks' lines ride along
      let rounds = 0;
      while (s.queue.length || s.inFlight) {
        w.active.add(s);
        await runRound();
        // a round that made no progress for this sink (failed insert): runRound waits RETRY_MS itself
        if (++rounds > 10_000) break;
      }
    },
    close() {
      if (!s.queue.length && !s.inFlight) w.active.delete(s);
    },
  };
}

/** One insert: up to MAX_BATCH lines of every sink with lines waiting (or one insert per process after a failure). */
async function writeRound(db: Queryable, w: Writer): Promise<void> {
  const taken: { sink: SinkState; entries: LogEntry[] }[] = [];
  let rows = 0;
  for (const sink of w.active) {
    if (!sink.queue.length) {
      w.active.delete(sink);
      continue;
    }
    if (rows >= MAX_ROWS) break;
    const entries = sink.queue.splice(0, Math.min(MAX_BATCH, MAX_ROWS - rows));
    sink.inFlight = entries.length;
    rows += entries.length;
    taken.push({ sink, entries });
  }
  // lines arriving from now on wait for the next round; lines left behind (a full batch) keep their age
  if (![...w.active].some((x) => x.queue.length)) w.waitingSince = undefined;
  if (!taken.length) return;
  try {
    if (taken.length > 1 && !w.isolate) {
      try {
        await appendLogsOfProcesses(
          db,
          taken.map((t) => ({ processId: t.sink.processId, attemptId: t.sink.attemptId, entries: t.entries })),
        );
        for (const t of taken) t.sink.failures = 0;
        return;
      } catch {
        // one process's row may be gone (a foreign key): write each on its own, once, to find out
        w.isolate = true;
        for (const t of taken) t.sink.queue.unshift(...t.entries);
        return;
      }
    }
    w.isolate = false;
    let failed = false;
    for (const t of taken) {
      try {
        await appendLogs(db, t.sink.processId, t.sink.attemptId, t.entries);
        t.sink.failures = 0;
      } catch (err) {
        if (++t.sink.failures >= ATTEMPTS) {
          t.sink.logger.warn({ err: { message: (err as Error).message }, processId: t.sink.processId, lines: t.entries.length }, 'log lines dropped after failed inserts');
          t.sink.failures = 0;
          continue;
        }
        t.sink.queue.unshift(...t.entries); // keep the order: retried before anything newer
        failed = true;
      }
    }
    if (failed) await new Promise((r) => setTimeout(r, RETRY_MS));
  } finally {
    for (const t of taken) t.sink.inFlight = 0;
  }
}
