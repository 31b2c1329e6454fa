/**
 * The tries of one scheduler task and its outcome (docs/scheduler.md#task-outcomes; SQL in
 * lib/db/schedulerTaskOutcomes.ts). Temporal runs an activity again when a try timed out, which it also does when the
 * try's worker was only cut off from Temporal for a while, or when the try failed after its work was done (a log write
 * that stalled). So a try claims its task before it sends a flow's request, records the outcome before anything else
 * that can stall, and a later try that finds the task claimed reports what the earlier one did instead of doing it
 * again: the recorded outcome, or (the earlier try still shows signs of life) that outcome once it is recorded, or
 * (its worker is lost) a failure saying so. Only a platform that could not be reached gives the task back.
 */
import crypto from 'node:crypto';
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import {
  claimTask,
  readTaskOutcome,
  recordLostTask,
  recordTaskOutcome,
  releaseTask,
  touchTask,
  type TaskKey,
  type TaskRunResult,
} from '../../lib/db/schedulerTaskOutcomes';
import type { ActivityDeps } from '../index';
import { pauseFor, untilAnswered } from './untilAnswered';

/** How often the try holding a task renews its sign of life (`alive_at`). */
export const HOLDER_BEAT_MS = 5_000;
/** A holding try is lost when its last sign of life is this old by PostgreSQL's clock… */
export const HOLDER_LOST_MS = 20_000;
/** …and a waiting try has seen it unchanged on its own reads for this long (a frozen PostgreSQL stops both clocks' meaning). */
export const HOLDER_LOST_CONFIRM_MS = 10_000;
const WAIT_POLL_MS = 1_000;

export interface TaskHolder {
  /** Records the outcome, waiting for PostgreSQL; false when this try had been taken over as lost meanwhile. */
  record(result: TaskRunResult): Promise<boolean>;
  /** Gives the task back: nothing was sent (the platform could not be reached); the next try may send. */
  release(): Promise<void>;
  /** Ends the sign of life (always, when the try ends). */
  stop(): void;
}

/**
 * This try holds the task (do the work; `givenBack`: how many tries before it found the platform unreachable), or the
 * task's outcome is known (report it, do nothing).
 */
export type Claim = { kind: 'held'; holder: TaskHolder; givenBack: number } | { kind: 'outcome'; result: TaskRunResult };

/**
 * Claims the task for this try, or returns the outcome an earlier try reached: recorded, or recorded while this try
 * waits (the earlier try still shows signs of life), or `lost()` once that try's worker is lost (no sign of life for
 * HOLDER_LOST_MS, confirmed over HOLDER_LOST_CONFIRM_MS of this try's reads). Waits for PostgreSQL; a stop ends it.
 * `attempt` names the try in the row: the activity's attempt, or a local try's own id (localTryId).
 */
export async function claimTaskOrOutcome(deps: ActivityDeps, key: TaskKey, signal: AbortSignal, lost: () => TaskRunResult, attempt = Context.current().info.attempt): Promise<Claim> {
  const log = deps.logger;
  let seen: { attempt: number; mark: string; observedMs: number; lastRead: number } | undefined;
  for (;;) {
    const claimed = await untilAnswered(log, 'claim task', signal, () => claimTask(deps.db, key, attempt));
    if (claimed) return { kind: 'held', holder: holdTask(deps, key, attempt, signal), givenBack: claimed.givenBack };
    const row = await untilAnswered(log, 'read task outcome', signal, () => readTaskOutcome(deps.db, key));
    if (row?.state === 'done' && row.result) return { kind: 'outcome', result: row.result };
    // this very try's claim, committed though its answer was lost (the claim was sent again)
    if (row?.state === 'running' && row.attempt === attempt) return { kind: 'held', holder: holdTask(deps, key, attempt, signal), givenBack: row.givenBack };
    if (row?.state === 'running') {
      const now = Date.now();
      if (!seen || seen.attempt !== row.attempt || seen.mark !== row.aliveMark) seen = { attempt: row.attempt, mark: row.aliveMark, observedMs: 0, lastRead: now };
      else {
        // a read that took long (PostgreSQL frozen) counts for little: the holder could not renew meanwhile either
        seen.observedMs += Math.min(now - seen.lastRead, 2 * WAIT_POLL_MS);
        seen.lastRead = now;
      }
      if (seen.observedMs >= HOLDER_LOST_CONFIRM_MS && row.staleMs >= HOLDER_LOST_MS) {
        const result = lost();
        if (await untilAnswered(log, 'record lost task', signal, () => recordLostTask(deps.db, key, row.attempt, row.aliveMark, result))) {
          log.warn({ executionId: key.executionId, taskIndex: key.taskIndex, lostAttempt: row.attempt }, 'scheduler task: the try that held it is lost; its outcome is recorded as such');
          return { kind: 'outcome', result };
        }
      }
      await pauseFor(WAIT_POLL_MS, signal);
      if (signal.aborted) throw new CancelledFailure('execution stopped');
    }
    // given back (unreachable) between the claim and the read: claim it again at once
  }
}

function holdTask(deps: ActivityDeps, key: TaskKey, attempt: number, signal: AbortSignal): TaskHolder {
  let renewing = false;
  const timer = setInterval(() => {
    if (renewing) return; // one at a time: a frozen PostgreSQL holds the last one
    renewing = true;
    touchTask(deps.db, key, attempt)
      .catch(() => undefined)
      .finally(() => {
        renewing = false;
      });
  }, HOLDER_BEAT_MS);
  timer.unref();
  return {
    record: (result) => untilAnswered(deps.logger, 'record task outcome', signal, () => recordTaskOutcome(deps.db, key, attempt, result)),
    release: () => untilAnswered(deps.logger, 'give task back', signal, () => releaseTask(deps.db, key, attempt)),
    stop: () => clearInterval(timer),
  };
}

/**
 * The id a try that is a local activity claims under (beginRunLocal): negative, so it is never an activity's attempt
 * (1, 2, …), and new for every try, so a local try run again after its worker was lost (the workflow task is retried
 * with the local activity at attempt 1 again) finds the lost try's claim another try's, not its own, and does not send.
 */
export function localTryId(): number {
  return -1 - crypto.randomInt(2 ** 31 - 2);
}

/** A failed result with `error`, at this moment. */
export function failedNow(error: string): TaskRunResult {
  const now = new Date().toISOString();
  return { ok: false, output: '', error, startedAt: now, completedAt: now };
}
