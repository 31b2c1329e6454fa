/**
 * The Temporal Schedules behind scheduled workflows: `schedule:<workflow>` starts `workflowRunWorkflow` on the
 * shared task queue with overlap policy SKIP, a catch-up window and optional jitter. PostgreSQL keeps the cron
 * string and the zone as the user wrote them; Temporal is asked only for the next action times.
 */
import { ScheduleNotFoundError, ScheduleOverlapPolicy, isGrpcServiceError, type Client } from '@temporalio/client';

/** gRPC status INVALID_ARGUMENT */
const INVALID_ARGUMENT = 3;

export const WORKFLOW_RUN_TYPE = 'workflowRunWorkflow';

export const scheduleIdOf = (workflow: string): string => `schedule:${workflow}`;

export interface ScheduleSettings {
  workflow: string;
  cron: string;
  timezone: string;
  jitterMs: number;
  paused: boolean;
  taskQueue: string;
  catchupWindowMs: number;
}

/** The arguments a scheduled start passes to workflowRunWorkflow. */
export interface WorkflowRunInput {
  workflow: string;
  trigger: 'manual' | 'schedule';
  /** set by a manual run (the API writes the row first); a scheduled run makes its own */
  executionId?: string;
  /** a manual run's start time as the API wrote it */
  startedAt?: string;
}

export async function createSchedule(client: Client, s: ScheduleSettings): Promise<void> {
  const args: [WorkflowRunInput] = [{ workflow: s.workflow, trigger: 'schedule' }];
  await client.schedule.create({
    scheduleId: scheduleIdOf(s.workflow),
    spec: { cronExpressions: [s.cron], timezone: s.timezone, ...(s.jitterMs > 0 ? { jitter: s.jitterMs } : {}) },
    action: { type: 'startWorkflow', workflowType: WORKFLOW_RUN_TYPE, taskQueue: s.taskQueue, workflowId: scheduleIdOf(s.workflow), args },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: s.catchupWindowMs },
    state: { paused: s.paused, note: s.paused ? 'created paused' : undefined },
  });
}

/** Replaces the spec (cron + zone + jitter), keeping the action, policies and pause state. */
export async function updateScheduleSpec(client: Client, workflow: string, cron: string, timezone: string, jitterMs: number): Promise<void> {
  await client.schedule.getHandle(scheduleIdOf(workflow)).update((prev) => ({
    ...prev,
    spec: { cronExpressions: [cron], timezone, ...(jitterMs > 0 ? { jitter: jitterMs } : {}) },
  }));
}

export async function setSchedulePaused(client: Client, workflow: string, paused: boolean, note: string): Promise<void> {
  const h = client.schedule.getHandle(scheduleIdOf(workflow));
  if (paused) await h.pause(note);
  else await h.unpause(note);
}

/** Deletes the schedule; a schedule that is already gone is fine. */
export async function deleteSchedule(client: Client, workflow: string): Promise<void> {
  try {
    await client.schedule.getHandle(scheduleIdOf(workflow)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/** The schedule's next action time per Temporal (null when paused, missing or with none upcoming). */
export async function nextRunOf(client: Client, workflow: string): Promise<Date | null> {
  try {
    const d = await client.schedule.getHandle(scheduleIdOf(workflow)).describe();
    if (d.state.paused) return null;
    return d.info.nextActionTimes[0] ?? null;
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  }
}

/**
 * When the Schedule meant to start the run `workflowId`, jitter included (the action's `scheduledAt` among the
 * Schedule's recent actions); null when the Schedule does not list it (not recorded yet, or older than the list).
 */
export async function actionScheduledAt(client: Client, scheduleId: string, workflowId: string): Promise<Date | null> {
  const d = await client.schedule.getHandle(scheduleId).describe();
  return d.info.recentActions.find((a) => a.action.workflow.workflowId === workflowId)?.scheduledAt ?? null;
}

/**
 * Temporal's reason when it rejected a schedule's spec (cron string, zone), else null. The SDK turns the server's
 * INVALID_ARGUMENT "Invalid schedule spec: <reason>" into a TypeError carrying the reason; a raw INVALID_ARGUMENT
 * (another SDK path) carries it in its details.
 */
export function specRejection(err: unknown): string | null {
  if (err instanceof TypeError) return err.message;
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (isGrpcServiceError(cause) && cause.code === INVALID_ARGUMENT && cause.details) return cause.details.replace(/^Invalid schedule spec: /, '');
  return null;
}
