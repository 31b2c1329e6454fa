/**
 * The write side of live logs: a process's log rows go to PostgreSQL in multi-row inserts, at most FLUSH_DELAY_MS
 * after a line arrives or at once when MAX_BATCH lines wait, one insert at a time so seqs follow the lines' order.
 * Each insert NOTIFYs the new high-water mark (migration 070), which is what API followers wait for.
 */
import type { Queryable } from '../db/pool';
import { appendLogs, type LogEntry } from '../db/processes';
import type { Logger } from '../logger';

export const FLUSH_DELAY_MS = 50;
export const MAX_BATCH = 500;
/** A batch whose insert failed is retried this many times (then dropped with a warning: the process row is gone). */
const ATTEMPTS = 3;
const RETRY_MS = 500;

export interface LogSink {
  /** Lines were added to the queue: writes them within FLUSH_DELAY_MS, or now when MAX_BATCH are waiting. */
  poke(): void;
  /** Writes everything queued so far; resolves once it is stored (or given up on). */
  flush(): Promise<void>;
  /** Stops the timer (call flush first to write what is left). */
  close(): void;
}

/** `queue` is the array the producer pushes entries into; the sink takes them out from the front. */
export function createLogSink(o: { db: Queryable; processId: string; attemptId: string; queue: LogEntry[]; logger: Logger }): LogSink {
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let failures = 0;
  const write = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (writing) return writing;
    if (!o.queue.length) return Promise.resolve();
    writing = drain().finally(() => {
      writing = undefined;
      if (o.queue.length) sink.poke(); // lines that arrived after the loop's last look
    });
    return writing;
  };
  const drain = async () => {
    while (o.queue.length) {
      const batch = o.queue.splice(0, MAX_BATCH);
      try {
        await appendLogs(o.db, o.processId, o.attemptId, batch);
        failures = 0;
      } catch (err) {
        if (++failures >= ATTEMPTS) {
          o.logger.warn({ err: { message: (err as Error).message }, processId: o.processId, lines: batch.length }, 'log lines dropped after failed inserts');
          failures = 0;
          continue;
        }
        o.queue.unshift(...batch); // keep the order: retried before anything newer
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  };
  const sink: LogSink = {
    poke() {
      if (writing) return; // the running write loop takes whatever arrives before it ends
      if (o.queue.length >= MAX_BATCH) void write();
      else if (!timer && o.queue.length) timer = setTimeout(() => void write(), FLUSH_DELAY_MS);
    },
    async flush() {
      if (writing) await writing;
      await write();
    },
    close() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
  return sink;
}
