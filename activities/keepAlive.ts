/**
 * Heartbeats for the whole run of an activity, so a worker that dies mid-activity is noticed within the activity's
 * heartbeatTimeout (seconds) rather than its startToCloseTimeout (minutes): the retry then runs on another worker.
 */
import { Context } from '@temporalio/activity';

export const KEEP_ALIVE_INTERVAL_MS = 2000;

export async function keepAlive<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), KEEP_ALIVE_INTERVAL_MS);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
