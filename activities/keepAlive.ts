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
  /**
   * Heartbeat details, read at each beat (e.g. lines seen so far). Without them, a keepAlive inside another one
   * reports the enclosing one's: the details are the activity's progress, which the next try reads back
   * (Context.info.heartbeatDetails), and a beat without them would erase it.
   */
  details?: () => unknown;
}

/** The details of each activity's keepAlives that have their own, innermost last. */
const detailsInForce = new WeakMap<Context, (() => unknown)[]>();

export async function keepAlive<T>(fn: () => Promise<T>, opts: KeepAliveOptions = {}): Promise<T> {
  const ctx = Context.current();
  const stack = detailsInForce.get(ctx) ?? [];
  detailsInForce.set(ctx, stack);
  if (opts.details) stack.push(opts.details);
  const details = opts.details ?? (() => stack.at(-1)?.());
  const beat = setInterval(() => {
    // once cancelled (a stop, or Temporal no longer knows this try) a beat tells Temporal nothing
    if (ctx.cancellationSignal.aborted) return;
    const current = details();
    if (current !== undefined) ctx.heartbeat(current);
    else ctx.heartbeat();
  }, opts.intervalMs ?? KEEP_ALIVE_INTERVAL_MS);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
    if (opts.details) stack.splice(stack.lastIndexOf(opts.details), 1);
  }
}
