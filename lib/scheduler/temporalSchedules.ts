/**
 * The Temporal Schedules behind scheduled workflows: one per schedule row, each starting `workflowRunWorkflow` on the
 * shared task queue with overlap policy SKIP, a catch-up window, optional jitter and the schedule's own input. A
 * workflow's default schedule is `schedule:<workflow>`; its other schedules are `schedule:<workflow>:<schedule id>`.
 * Cron schedules keep the cron string and zone as written in PostgreSQL; one-time schedules are a single calendar
 * time with one action allowed (`now`: no times at all, triggered once right after creation). Temporal is asked only for the
 * next action time and whether an action was taken.
 */
import { ScheduleNotFoundError, ScheduleOverlapPolicy, isGrpcServiceError, type Client, type ScheduleSpec } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { ArmadaWorkflow } from '../temporal/searchAttributes';
import { RUN_PATHS } from './runPaths';

/** gRPC status INVALID_ARGUMENT */
const INVALID_ARGUMENT = 3;

export const WORKFLOW_RUN_TYPE = 'workflowRunWorkflow';

/** The Temporal id of a workflow's default schedule. */
export const scheduleIdOf = (workflow: string): string => `schedule:${workflow}`;
/** The Temporal id of another schedule of a workflow (workflow names cannot contain ':'). */
export const extraScheduleIdOf = (workflow: string, id: string): string => `schedule:${workflow}:${id}`;

/** When a schedule fires: a cron string in a zone, or once (at an instant, or at once on creation). */
export type ScheduleTiming = { type: 'cron'; cron: string; timezone: string; jitterMs: number } | { type: 'one-time'; runAt: Date | 'now' };

/** What a schedule starts: its Temporal id, the workflow (name and id), the schedule row and the input of its runs. */
export interface ScheduleTarget {
  temporalId: string;
  workflow: string;
  workflowId: string;
  scheduleId: string;
  input: unknown;
}

export interface ScheduleSettings {
  target: ScheduleTarget;
  timing: ScheduleTiming;
  paused: boolean;
  taskQueue: string;
  catchupWindowMs: number;
}

/** The arguments a start passes to workflowRunWorkflow. */
export interface WorkflowRunInput {
  workflow: string;
  /**
   * The id of the workflow that started the run (scheduler_workflows.id): the run is that workflow's, not that of
   * another workflow created later under the name (docs/scheduler.md#deleting). Absent on runs of schedules created
   * before runs carried it (until the schedule is next changed).
   */
  workflowId?: string;
  trigger: 'manual' | 'schedule';
  /** set by a manual run (the API writes the row first); a scheduled run makes its own */
  executionId?: string;
  /** a manual run's start time as the API wrote it */
  startedAt?: string;
  /** the schedule row that starts it (absent on schedules created before schedules had rows, and on manual runs) */
  scheduleId?: string;
  /** the run's input: flow tasks get it instead of their own `input`, scripts in ARMADA_INPUT; absent or null = none */
  input?: unknown;
  /** the execution a retry re-runs */
  retryOf?: string;
  /** the code paths the run takes (RUN_PATHS, lib/scheduler/runPaths.ts); absent on runs of older schedules */
  paths?: number;
}

const MONTHS = ['JANUARY', 'FEBRUARY', 'MARCH', 'APRIL', 'MAY', 'JUNE', 'JULY', 'AUGUST', 'SEPTEMBER', 'OCTOBER', 'NOVEMBER', 'DECEMBER'] as const;

function specOf(t: ScheduleTiming): ScheduleSpec {
  if (t.type === 'cron') return { cronExpressions: [t.cron], timezone: t.timezone, ...(t.jitterMs > 0 ? { jitter: t.jitterMs } : {}) };
  if (t.runAt === 'now') return {}; // no times: the one action is the trigger at creation
  const d = t.runAt;
  // the instant in UTC fields, so what Temporal runs is exactly the instant the API reported
  const at = { year: d.getUTCFullYear(), month: MONTHS[d.getUTCMonth()], dayOfMonth: d.getUTCDate(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds() };
  return { calendars: [at], timezone: 'UTC' };
}

function argsOf(t: ScheduleTarget): [WorkflowRunInput] {
  return [{ workflow: t.workflow, workflowId: t.workflowId, trigger: 'schedule', scheduleId: t.scheduleId, ...(t.input !== null && t.input !== undefined ? { input: t.input } : {}), paths: RUN_PATHS }];
}

/** ArmadaWorkflow on the schedule and on every run it starts (docs/operations.md#search-attributes). */
export const workflowSearchAttributes = (workflow: string): SearchAttributePair[] => [{ key: ArmadaWorkflow, value: workflow }];

/**
 * Creates the Temporal Schedule. A `now` schedule gets no times and is not triggered here: the caller triggers it
 * (triggerSchedule) once its row is committed, so the run always finds the row it links to.
 */
export async function createSchedule(client: Client, s: ScheduleSettings): Promise<void> {
  const once = s.timing.type === 'one-time';
  await client.schedule.create({
    scheduleId: s.target.temporalId,
    spec: specOf(s.timing),
    action: {
      type: 'startWorkflow',
      workflowType: WORKFLOW_RUN_TYPE,
      taskQueue: s.taskQueue,
      workflowId: s.target.temporalId,
      args: argsOf(s.target),
      typedSearchAttributes: workflowSearchAttributes(s.target.workflow),
    },
    typedSearchAttributes: workflowSearchAttributes(s.target.workflow),
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: s.catchupWindowMs },
    state: {
      paused: s.paused,
      note: s.paused ? 'created paused' : undefined,
      ...(once ? { remainingActions: 1 } : {}),
    },
  });
}

/** Replaces the spec (when or how often) and the action's input, keeping the policies and the pause state. */
export async function updateSchedule(client: Client, target: ScheduleTarget, timing: ScheduleTiming): Promise<void> {
  await client.schedule.getHandle(target.temporalId).update((prev) => ({
    ...prev,
    spec: specOf(timing),
    // the action gets ArmadaWorkflow too (schedules created before it had none)
    action:
      prev.action.type === 'startWorkflow'
        ? { ...prev.action, args: argsOf(target), typedSearchAttributes: workflowSearchAttributes(target.workflow) }
        : prev.action,
  }));
}

/** Starts the schedule's action once, now (the one run of a `now` schedule). */
export async function triggerSchedule(client: Client, temporalId: string): Promise<void> {
  await client.schedule.getHandle(temporalId).trigger();
}

export async function setSchedulePaused(client: Client, temporalId: string, paused: boolean, note: string): Promise<void> {
  const h = client.schedule.getHandle(temporalId);
  if (paused) await h.pause(note);
  else await h.unpause(note);
}

/** Deletes the schedule; a schedule that is already gone is fine. */
export async function deleteSchedule(client: Client, temporalId: string): Promise<void> {
  try {
    await client.schedule.getHandle(temporalId).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/** What Temporal says of a schedule: its next action time (null when paused or none is upcoming) and how many actions it took. */
export async function scheduleState(client: Client, temporalId: string): Promise<{ nextRun: Date | null; actionsTaken: number } | null> {
  try {
    const d = await client.schedule.getHandle(temporalId).describe();
    return { nextRun: d.state.paused ? null : (d.info.nextActionTimes[0] ?? null), actionsTaken: d.info.numActionsTaken };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return null;
    throw err;
  }
}

/** The schedule's next action time per Temporal (null when paused, missing or with none upcoming). */
export async function nextRunOf(client: Client, temporalId: string): Promise<Date | null> {
  return (await scheduleState(client, temporalId))?.nextRun ?? null;
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
