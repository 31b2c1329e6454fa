/**
 * The scheduler's own Temporal schedule `scheduler-maintenance:<task queue>`: every healthCheckInterval it starts
 * schedulerMaintenanceWorkflow (source health check, execution retention). Created or updated by every scheduler
 * API process on start; idempotent, so replicas do not fight.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Logger } from '../logger';

export const maintenanceScheduleId = (taskQueue: string): string => `scheduler-maintenance:${taskQueue}`;

export async function ensureMaintenanceSchedule(client: Client, taskQueue: string, intervalMs: number): Promise<void> {
  const scheduleId = maintenanceScheduleId(taskQueue);
  if (intervalMs <= 0) {
    await client.schedule
      .getHandle(scheduleId)
      .delete()
      .catch(() => undefined);
    return;
  }
  const spec = { intervals: [{ every: intervalMs }] };
  try {
    await client.schedule.create({
      scheduleId,
      spec,
      action: { type: 'startWorkflow', workflowType: 'schedulerMaintenanceWorkflow', taskQueue, workflowId: scheduleId, args: [] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: intervalMs },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((prev) => ({ ...prev, spec }));
  }
}

export interface MaintenanceSetup {
  client: () => Promise<Client>;
  taskQueue: string;
  intervalMs: number;
  logger: Logger;
  /** Aborted when the process closes: the retries stop. */
  signal: AbortSignal;
  /** First retry delay, doubled after each failure up to maxDelayMs (defaults 1 s and 30 s). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** At most one warn line per this many ms (default 60 s); the failures in between are counted in the next one. */
  warnEveryMs?: number;
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done);
  });

/**
 * Sets the maintenance schedule up, retrying with bounded backoff for as long as Temporal is unreachable (never gives
 * up while the process runs): without it no source is health-checked and no execution pruned, so each failure is a
 * warn line (rate-limited) and the success an info line.
 */
export async function setUpMaintenanceScheduleUntilDone(s: MaintenanceSetup): Promise<boolean> {
  const log = s.logger.child({ component: 'scheduler-maintenance' });
  const maxDelay = s.maxDelayMs ?? 30_000;
  const warnEvery = s.warnEveryMs ?? 60_000;
  let delay = s.initialDelayMs ?? 1000;
  let failures = 0;
  let unwarned = 0;
  let lastWarn = Number.NEGATIVE_INFINITY;
  while (!s.signal.aborted) {
    try {
      await ensureMaintenanceSchedule(await s.client(), s.taskQueue, s.intervalMs);
      log.info({ scheduleId: maintenanceScheduleId(s.taskQueue), failedTries: failures }, 'maintenance schedule set up');
      return true;
    } catch (err) {
      if (s.signal.aborted) break;
      failures++;
      unwarned++;
      if (Date.now() - lastWarn >= warnEvery) {
        log.warn(
          { err: { message: (err as Error).message }, failedTries: failures, failedSinceLastWarning: unwarned, retryInMs: delay },
          'maintenance schedule not set up yet (Temporal unreachable?); retrying',
        );
        lastWarn = Date.now();
        unwarned = 0;
      } else {
        log.debug({ err: { message: (err as Error).message }, failedTries: failures }, 'maintenance schedule not set up yet');
      }
      await pause(delay, s.signal);
      delay = Math.min(delay * 2, maxDelay);
    }
  }
  return false;
}
