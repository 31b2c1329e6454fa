/**
 * The scheduler's own Temporal schedule `scheduler-maintenance:<task queue>`: every healthCheckInterval it starts
 * schedulerMaintenanceWorkflow (source health check, execution retention). Created or updated by every scheduler
 * API process on start; idempotent, so replicas do not fight.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';

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
