/**
 * Heartbeats for the whole run of an activity, so a worker that dies mid-activity is noticed within the activity's
 * heartbeatTimeout (seconds) rather than its startToCloseTimeout (minutes): the retry then runs on another worker.
 * The one place activities heartbeat on a timer; `details` (read at each beat) reports progress with the beat.
 */
import { Context } from '@temporalio/activity';

export const KEEP_ALIVE_INTERVAL_MS = 2000;

export interface KeepAliveOptions {
  /** Beat interval; shorter than a third of the activity's heartbeatTimeout (default 2 s). */
  intervalMs?: number;
  /** Heartbeat details, read at each beat (e.g. lines seen so far). */
  details?: () => unknown;
}

export async function keepAlive<T>(fn: () => Promise<T>, opts: KeepAliveOptions = {}): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(() => {
    // once cancelled (a stop, or Temporal no longer knows this try) a beat tells Temporal nothing
    if (ctx.cancellationSignal.aborted) return;
    if (opts.details) ctx.heartbeat(opts.details());
    else ctx.heartbeat();
  }, opts.intervalMs ?? KEEP_ALIVE_INTERVAL_MS);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
