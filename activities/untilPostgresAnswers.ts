/**
 * An activity's PostgreSQL steps across an outage. A step that fails because PostgreSQL cannot take it now
 * (isPostgresUnavailable: refused, reset, starting up or shutting down, short of a resource, read-only) runs again, the activity
 * heartbeating meanwhile, until PostgreSQL answers: for up to POSTGRES_OUTAGE_WAIT_MS, and never into the activity's
 * start-to-close deadline. So a restart or an outage of minutes costs no try of the activity's retry policy, whose
 * few tries stay for what they are for (a lost worker, a genuine failure), and an agent that already ran is not run
 * again because its row could not be written. A step must be safe to run again (as every activity is).
 *
 * A step still refused at the end fails with a retryable `PostgresUnavailable` whose message names the cause but not
 * the server's address: it may become an attempt's error, which API clients read.
 */
import { ApplicationFailure, Context, type Info } from '@temporalio/activity';
import { POSTGRES_OUTAGE_WAIT_MS } from '../lib/db/outage';
import { isPostgresUnavailable } from '../lib/db/pool';
import { keepAlive } from './keepAlive';

const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 5000;
/** Kept before the activity's deadline: the step gives up with its own error instead of being timed out by Temporal. */
const DEADLINE_MARGIN_MS = 5000;

export const POSTGRES_UNAVAILABLE = 'PostgresUnavailable';

export interface PostgresWaitOptions {
  /** Time the activity still needs after this step, kept free before its deadline (runAgent's prepare: the agent's run). */
  reserveMs?: number;
}

export async function untilPostgresAnswers<T>(step: () => Promise<T>, opts: PostgresWaitOptions = {}): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!isPostgresUnavailable(err)) throw err;
    // beats every second: some of the activities waiting here have a heartbeat timeout of 3 s
    return keepAlive(() => waitForAnswer(step, err, opts), { intervalMs: 1000 });
  }
}

async function waitForAnswer<T>(step: () => Promise<T>, first: unknown, opts: PostgresWaitOptions): Promise<T> {
  const ctx = Context.current();
  const started = Date.now();
  const limit = Math.min(started + POSTGRES_OUTAGE_WAIT_MS, activityDeadline(ctx.info) - (opts.reserveMs ?? 0) - DEADLINE_MARGIN_MS);
  let last = first;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    if (Date.now() + pause > limit) throw postgresOutageFailure(last, Date.now() - started);
    await ctx.sleep(pause); // rejects when the activity is cancelled
    try {
      return await step();
    } catch (err) {
      if (!isPostgresUnavailable(err)) throw err;
      last = err;
    }
  }
}

/** When Temporal times the current try out: its start-to-close (and schedule-to-close, when set) deadline. */
function activityDeadline(info: Info): number {
  const startToClose = info.startToCloseTimeoutMs > 0 ? info.currentAttemptScheduledTimestampMs + info.startToCloseTimeoutMs : Number.POSITIVE_INFINITY;
  const scheduleToClose = info.scheduleToCloseTimeoutMs > 0 ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs : Number.POSITIVE_INFINITY;
  return Math.min(startToClose, scheduleToClose);
}

/**
 * The error of a step PostgreSQL did not take within the wait: its cause as a code (ECONNREFUSED, SQLSTATE 57P03, …),
 * never the pg error's own message, which names the server's address (`connect ECONNREFUSED 10.0.0.5:5432`).
 */
export function postgresOutageFailure(err: unknown, waitedMs: number): ApplicationFailure {
  const code = (err as { code?: unknown } | undefined)?.code;
  const cause = typeof code === 'string' && /^[A-Z0-9_]{2,24}$/.test(code) ? code : 'connection lost';
  return ApplicationFailure.retryable(`the database (PostgreSQL) was unavailable (${cause}) and did not answer again within ${Math.round(waitedMs / 1000)} s`, POSTGRES_UNAVAILABLE);
}
