/**
 * After a route's call on a Temporal Schedule got no answer in time (the route answered 503, and its transaction left
 * the rows as they were), Temporal may still do what it was asked: the request reached it, only the answer did not
 * come back. So the API makes that Temporal Schedule match its row again once Temporal answers: a schedule whose row
 * is gone (or was never committed) is deleted, one with a row gets the row's spec, input and pause state, and one the
 * row has but Temporal lost is created again (docs/scheduler.md#temporal-deadlines). The row is the truth; the resync
 * holds it (or, without a row, the id's advisory lock, which routes creating a schedule take too) while it asks Temporal.
 */
import type { FastifyBaseLogger } from 'fastify';
import { withTransaction } from '../../lib/db/pool';
import { lockScheduleByTemporalId, lockTemporalSchedule } from '../../lib/db/schedulerSchedules';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { createSchedule, deleteSchedule, scheduleState, setSchedulePaused, updateSchedule } from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import { targetOf, timingOf } from './scheduleViews';
import { temporalClient, withinDeadline } from './temporalAccess';

/** How long the API keeps trying to resync a schedule (Temporal down longer than that: an operator's matter, logged). */
const RESYNC_FOR_MS = 15 * 60_000;
const FIRST_PAUSE_MS = 1000;
const MAX_PAUSE_MS = 30_000;
/** After the resync, it is done again this long after the pass before (a late request undone). */
const CONFIRM_AFTER_MS = [2000, 5000];

/**
 * Starts (in the background) making the Temporal Schedule `temporalId` match its row once Temporal answers: tries
 * again (1 s doubling to 30 s) for up to RESYNC_FOR_MS, or until the process closes its pool. Once it has, it does
 * it again CONFIRM_AFTER_MS later, twice: the request that got no answer may reach Temporal only when the connection
 * is back, beside the resync's own calls, and be applied after the resync (seen in schedulerTemporalDeadlines under
 * CI load: the late pause came after the resync's resume, and nothing undid it). Each pass sets the row's state
 * again, so a late request applied before the last pass is undone. Two resyncs of one schedule at once wait for each
 * other (the locks above) and leave the same result.
 */
export function resyncScheduleLater(deps: DetailServiceDeps, temporalId: string, log: FastifyBaseLogger): void {
  void (async () => {
    const giveUpAt = Date.now() + RESYNC_FOR_MS;
    let pause = FIRST_PAUSE_MS;
    let passes = 0;
    for (let tries = 1; !deps.db.ending; tries++) {
      await new Promise((r) => setTimeout(r, pause).unref());
      if (deps.db.ending) return;
      try {
        const what = await resyncSchedule(deps, temporalId);
        if (passes === 0) log.info({ schedule: temporalId, tries, what }, 'schedule resynced with its row after Temporal did not answer');
        if (passes === CONFIRM_AFTER_MS.length) return;
        pause = CONFIRM_AFTER_MS[passes++] as number;
        continue;
      } catch (err) {
        if (Date.now() > giveUpAt) {
          log.warn({ err: { message: (err as Error).message }, schedule: temporalId, tries }, 'schedule not resynced: Temporal still does not answer; its row and Temporal may differ');
          return;
        }
      }
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  })();
}

/** One resync: what it did (`deleted`, `created`, `updated`, `unchanged`). Throws when Temporal does not answer. */
export async function resyncSchedule(deps: DetailServiceDeps, temporalId: string): Promise<string> {
  const settings = schedulerSettings(deps.config);
  return withTransaction(deps.db, async (c) => {
    await lockTemporalSchedule(c, temporalId);
    const row = await lockScheduleByTemporalId(c, temporalId);
    const client = await temporalClient(deps, 'Resyncing a schedule');
    return withinDeadline(client, 'Resyncing a schedule', async () => {
      // no row, or a default row without a cron: no Temporal Schedule
      if (!row || (row.type === 'cron' && row.cron === null)) {
        await deleteSchedule(client, temporalId);
        return 'deleted';
      }
      const ran = row.type === 'one-time' && row.ran_at !== null;
      const state = await scheduleState(client, temporalId);
      if (!state) {
        if (ran) return 'unchanged'; // its one run is done: nothing to restore
        await createSchedule(client, { target: targetOf(row), timing: timingOf(row), paused: !row.enabled, taskQueue: deps.config.temporal.taskQueue, catchupWindowMs: settings.catchupWindowMs });
        return 'created';
      }
      if (!ran) await updateSchedule(client, targetOf(row), timingOf(row));
      await setSchedulePaused(client, temporalId, !row.enabled, row.enabled ? 'resumed: resynced with Armada' : 'paused: resynced with Armada');
      return 'updated';
    });
  });
}
