/**
 * The execution projection of the lean run (workflowRunWorkflow): run as local activities, so a write costs a
 * PostgreSQL round trip and no trip through Temporal. `startExecution` does everything before the first task in one
 * step; `recordProgress` writes the row and the log lines of one state change together. Both are idempotent (the
 * row never leaves a terminal status, log lines carry stable keys).
 */
import { Context } from '@temporalio/activity';
import {
  FOREIGN_KEY_VIOLATION,
  appendExecutionLogs,
  upsertExecution,
  type ExecutionRecord,
  type LogLine,
  type TaskRunState,
} from '../../lib/db/schedulerExecutions';
import { withTransaction } from '../../lib/db/pool';
import { getSchedule, markScheduleRan } from '../../lib/db/schedulerSchedules';
import { getWorkflow, type WorkflowTask } from '../../lib/db/schedulerWorkflows';
import { schedulerMetrics, type SchedulerMetrics } from '../../lib/scheduler/metrics';
import { actionScheduledAt } from '../../lib/scheduler/temporalSchedules';
import type { ActivityDeps } from '../index';
import { countFinish } from './schedulerActivities';

/** What the workflow knows when it starts: the row's identity and times. */
export interface ExecutionStart {
  id: string;
  workflow: string;
  temporalWorkflowId: string;
  trigger: 'manual' | 'schedule';
  /** the nominal (cron) time of a scheduled run */
  scheduledAt: string | null;
  startedAt: string;
  /** the Temporal Schedule that started the run (TemporalScheduledById), null for a manual run */
  temporalScheduleId: string | null;
  /** the schedule row that started the run (absent on schedules from before schedule rows, and on manual runs) */
  scheduleId: string | null;
  /** the run's input (a schedule's or a retried execution's), null = none */
  input: unknown;
  /** the execution a retry re-runs */
  retryOf: string | null;
}

export interface StartedExecution {
  tasks: WorkflowTask[];
  /** the row's task states as written: the first task running */
  states: TaskRunState[];
  /** log keys `w:0` … `w:<n-1>` are taken */
  logLines: number;
}

/** How long a jittered run waits for its Schedule to list the action (the Schedule records it right after the start). */
const ACTION_LOOKUP_TRIES = 10;
const ACTION_LOOKUP_PAUSE_MS = 200;

export function createExecutionProgressActivities(deps: ActivityDeps) {
  const metrics = schedulerMetrics(deps.metrics);

  /** Writes the row, then its lines; false when the row's workflow (or the row) is gone. */
  async function write(e: ExecutionRecord, lines: LogLine[]): Promise<{ exists: boolean; changed: boolean }> {
    let changed: Awaited<ReturnType<typeof upsertExecution>>;
    try {
      // one transaction: a reader never sees the new status without the log lines of the same step
      changed = await withTransaction(deps.db, async (c) => {
        const result = await upsertExecution(c, e);
        await appendExecutionLogs(c, e.id, lines);
        return result;
      });
    } catch (err) {
      if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) return { exists: false, changed: false };
      throw err;
    }
    if (changed) countFinish(metrics, e, changed.previous);
    return { exists: true, changed: changed !== null };
  }

  return {
    /** Loads the definition, writes the row with its first task running and the first log lines. null = deleted. */
    async startExecution(input: ExecutionStart): Promise<StartedExecution | null> {
      const def = await getWorkflow(deps.db, input.workflow);
      if (!def) return null; // the workflow was deleted after this start was queued
      const now = new Date().toISOString();
      const first = def.tasks[0];
      const states: TaskRunState[] = def.tasks.map((t, i) => ({
        name: t.name,
        type: t.type,
        status: i === 0 ? 'running' : 'pending',
        startedAt: i === 0 ? now : null,
        completedAt: null,
        output: '',
      }));
      const started = `Execution started (${input.trigger}${input.retryOf ? `, retry of ${input.retryOf}` : ''})`;
      const lines: LogLine[] = [{ key: 'w:0', ts: now, level: 'info', message: started }];
      if (first) lines.push({ key: 'w:1', ts: now, level: 'info', message: `Task ${first.name} started` });
      const { temporalScheduleId, ...row } = input;
      const written = await write({ ...row, status: 'running', completedAt: null, tasks: states, error: null }, lines);
      if (!written.exists) return null;
      // a one-time schedule is complete once its run started (idempotent: the first time wins)
      if (input.scheduleId) await markScheduleRan(deps.db, input.scheduleId, input.startedAt);
      if (written.changed) {
        metrics.executions.inc({ workflow: input.workflow, status: 'started' });
        if (input.scheduledAt) {
          // the jitter of the schedule that started the run (its row; the default schedule's on schedules from before rows)
          const jitterMs = input.scheduleId ? ((await getSchedule(deps.db, input.workflow, input.scheduleId))?.jitter_ms ?? 0) : def.jitter_ms;
          if (jitterMs > 0 && temporalScheduleId) void observeJitteredLag(deps, metrics, temporalScheduleId, input);
          else metrics.lag.observe(Math.max(0, Date.parse(input.startedAt) - Date.parse(input.scheduledAt)) / 1000);
        }
      }
      return { tasks: def.tasks, states, logLines: lines.length };
    },

    /** Writes one state change: the row and its log lines. `exists: false` when the execution is gone. */
    async recordProgress(input: ExecutionRecord & { logs: LogLine[] }): Promise<{ exists: boolean }> {
      const { logs, ...row } = input;
      return { exists: (await write(row, logs)).exists };
    },
  };
}

/**
 * Lag of a jittered run, measured from the time Temporal meant to start it (the nominal time plus the schedule's
 * jitter offset: the action's `scheduledAt` in the Schedule's recent actions), so jitter does not count as lag.
 * Runs beside the execution, not before its first task; when the Schedule cannot tell, nothing is observed.
 */
async function observeJitteredLag(deps: ActivityDeps, metrics: SchedulerMetrics, scheduleId: string, run: ExecutionStart): Promise<void> {
  try {
    const client = Context.current().client;
    for (let i = 0; i < ACTION_LOOKUP_TRIES; i++) {
      const at = await actionScheduledAt(client, scheduleId, run.temporalWorkflowId);
      if (at) {
        metrics.lag.observe(Math.max(0, Date.parse(run.startedAt) - at.getTime()) / 1000);
        return;
      }
      await new Promise((r) => setTimeout(r, ACTION_LOOKUP_PAUSE_MS));
    }
    deps.logger.warn({ scheduleId, workflowId: run.temporalWorkflowId }, 'schedule lag not observed: the schedule does not list this run');
  } catch (err) {
    deps.logger.warn({ err: { message: (err as Error).message }, scheduleId }, 'schedule lag not observed');
  }
}
