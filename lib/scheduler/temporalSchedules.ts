/**
 * The Temporal Schedules behind scheduled workflows: `schedule:<workflow>` starts `workflowRunWorkflow` on the
 * shared task queue with overlap policy SKIP, a catch-up window and optional jitter. PostgreSQL keeps the cron
 * string and the zone as the user wrote them; Temporal is asked only for the next action times.
 */
import { ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { ArmadaWorkflow } from '../temporal/searchAttributes';

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

/** ArmadaWorkflow on the schedule and on every run it starts (docs/operations.md#search-attributes). */
export const workflowSearchAttributes = (workflow: string): SearchAttributePair[] => [{ key: ArmadaWorkflow, value: workflow }];

export async function createSchedule(client: Client, s: ScheduleSettings): Promise<void> {
  const args: [WorkflowRunInput] = [{ workflow: s.workflow, trigger: 'schedule' }];
  await client.schedule.create({
    scheduleId: scheduleIdOf(s.workflow),
    spec: { cronExpressions: [s.cron], timezone: s.timezone, ...(s.jitterMs > 0 ? { jitter: s.jitterMs } : {}) },
    action: {
      type: 'startWorkflow',
      workflowType: WORKFLOW_RUN_TYPE,
      taskQueue: s.taskQueue,
      workflowId: scheduleIdOf(s.workflow),
      args,
      typedSearchAttributes: workflowSearchAttributes(s.workflow),
    },
    typedSearchAttributes: workflowSearchAttributes(s.workflow),
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: s.catchupWindowMs },
    state: { paused: s.paused, note: s.paused ? 'created paused' : undefined },
  });
}

/**
 * Replaces the spec (cron + zone + jitter), keeping the action, policies and pause state; the action gets
 * ArmadaWorkflow (schedules created before it had none).
 */
export async function updateScheduleSpec(client: Client, workflow: string, cron: string, timezone: string, jitterMs: number): Promise<void> {
  await client.schedule.getHandle(scheduleIdOf(workflow)).update((prev) => ({
    ...prev,
    action: { ...prev.action, typedSearchAttributes: workflowSearchAttributes(workflow) },
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
