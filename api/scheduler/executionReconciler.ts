/**
 * Fails the executions Temporal has no run for (docs/scheduler.md#executions-without-a-run). A manual run or a retry
 * writes its row before it starts its Temporal run, so a request cut short between the two (the API process killed,
 * PostgreSQL released the request with "outcome unknown" and applied the insert later) leaves a `running` row that
 * nothing would ever finish. On start and every few seconds, each running execution older than
 * `scheduler.reconcileAfterSeconds` is looked up in Temporal by its workflow id: one Temporal does not know is failed
 * (never started again: its requester got no 200, and may have asked again). One whose Temporal run has closed without
 * writing its end (ended in Temporal behind Armada's back) is stopped when the run was terminated or cancelled there
 * (`temporal workflow terminate`: an operator stopped it), saying so with the terminate's reason, and failed with
 * what Temporal says of it otherwise (a run timeout, a failure). One Temporal has running is left alone; so is every one while Temporal cannot be
 * asked (unreachable is not "not found"). Each one ended counts in `armada_scheduler_executions_reconciled_total`.
 */
import type { Client } from '@temporalio/client';
import { failExecutionWithoutRun, unfinishedExecutions, type ExecutionCursor, type UnfinishedExecution } from '../../lib/db/schedulerExecutions';
import type { Logger } from '../../lib/logger';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { isTemporalUnreachable } from '../../lib/temporal/client';
import { closedRun } from '../../lib/temporal/closedRun';
import { counter } from '../../lib/metrics';
import { workflowStatus } from '../../lib/temporal/workflowHandles';
import type { DetailServiceDeps } from '../detailServiceDeps';
import { TEMPORAL_CALL_TIMEOUT_MS } from './temporalAccess';

/** The execution's error when its run never began: its Temporal run was never started. */
export const NEVER_STARTED = 'The execution never started: the request that made it was interrupted before its Temporal run was started';
/** The execution's error when its run began and Temporal no longer has it, no task running then. */
export const RUN_GONE = "The execution's Temporal run no longer exists; its outcome is unknown";
/** The running task's error then (the execution's: `Task <name> failed: <this>`). */
export const RUN_GONE_TASK = "the execution's Temporal run no longer exists; what this task did is unknown";

/** The execution's error when its Temporal run closed (`status`, e.g. terminated) without writing the execution's end. */
export const runClosed = (status: string) => `The execution's Temporal run was ${closedAs(status)} before it recorded an outcome; what it did is unknown`;
/** The running task's error then. */
export const runClosedTask = (status: string) => `the execution's Temporal run was ${closedAs(status)}; what this task did is unknown`;

/** Whether a run Temporal closed with `status` was stopped there by someone (terminated, cancelled) rather than failing. */
export const stoppedInTemporal = (status: string): boolean => status === 'TERMINATED' || status === 'CANCELLED';

/** The terminate's reason as the error says it: ` (reason: …)`, or nothing when none was given. */
const reasonText = (reason: string | null) => (reason ? ` (reason: ${reason})` : '');

/** The execution's error (and its `warning` log line) when its Temporal run was terminated or cancelled in Temporal. */
export const runStopped = (status: string, reason: string | null) =>
  `The execution's Temporal run was ${closedAs(status)} in Temporal${reasonText(reason)} before it recorded an outcome; the execution is recorded stopped, and what it did is unknown`;
/** The running task's error then (the task ends `stopped`). */
export const runStoppedTask = (status: string, reason: string | null) =>
  `the execution's Temporal run was ${closedAs(status)} in Temporal${reasonText(reason)}; what this task did is unknown`;

/** Temporal's close status after "was" (TERMINATED → terminated, TIMED_OUT → timed out, FAILED → closed as failed). */
function closedAs(status: string): string {
  if (status === 'TERMINATED' || status === 'CANCELLED') return status.toLowerCase();
  if (status === 'TIMED_OUT') return 'timed out';
  return `closed as ${status.toLowerCase().replace(/_/g, ' ')}`;
}

/** Executions looked up per pass: a pass's work is bounded, and the walk goes on from there at the next pass. */
const PAGE = 50;
const MAX_EVERY_MS = 15_000;
const WARN_EVERY_MS = 60_000;

export interface ExecutionReconciler {
  /** Runs one pass now (startup, tests); resolves with how many executions it ended (failed or stopped). */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * What asking Temporal about one execution said: its run is running, closed (with Temporal's status), it has none, it
 * could not be asked, or another error.
 */
type Lookup = { found: 'running' | 'missing' | 'unreachable' } | { found: 'closed'; status: string; reason: string | null } | { found: 'error'; err: unknown };

async function lookUp(client: Client, e: UnfinishedExecution): Promise<Lookup> {
  try {
    const status = await client.connection.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () => workflowStatus(client, e.temporal_workflow_id));
    if (status === null) return { found: 'missing' };
    if (status === 'RUNNING') return { found: 'running' };
    // a terminate's reason, from its close event (none when Temporal does not say within the deadline)
    const reason = status === 'TERMINATED' ? ((await closedRun(client, e.temporal_workflow_id, undefined, TEMPORAL_CALL_TIMEOUT_MS))?.reason ?? null) : null;
    return { found: 'closed', status, reason };
  } catch (err) {
    return isTemporalUnreachable(err) ? { found: 'unreachable' } : { found: 'error', err };
  }
}

export function startExecutionReconciler(deps: Pick<DetailServiceDeps, 'db' | 'config' | 'temporal' | 'logger' | 'metrics'>): ExecutionReconciler {
  const log: Logger = deps.logger.child({ component: 'execution-reconciler' });
  const reconciled = counter(
    deps.metrics.registry,
    'armada_scheduler_executions_reconciled_total',
    'scheduler executions ended by the reconciler, by why: never_started (Temporal never got the run), run_gone (Temporal no longer has it), run_closed (it closed in Temporal without recording its end: stopped when terminated or cancelled there, else failed)',
    ['reason'],
  );
  const { reconcileAfterMs } = schedulerSettings(deps.config);
  const everyMs = Math.min(MAX_EVERY_MS, Math.max(1000, Math.floor(reconcileAfterMs / 2)));
  // the walk over the running executions, in start order, a page per pass; back to the first after the last page
  let cursor: ExecutionCursor | undefined;
  let stopped = false;
  let lastWarn = 0;
  let failedTries = 0;
  // at most one warn line a minute, however many passes or executions met the same trouble
  const warn = (message: string, err?: unknown, fields: Record<string, unknown> = {}) => {
    failedTries++;
    if (Date.now() - lastWarn < WARN_EVERY_MS) return;
    lastWarn = Date.now();
    log.warn({ failedTries, ...fields, ...(err ? { err: { message: (err as Error)?.message } } : {}) }, message);
  };

  const fail = async (e: UnfinishedExecution): Promise<boolean> => {
    const failed = await failExecutionWithoutRun(deps.db, e.id, { begun: e.begun, error: e.begun ? RUN_GONE : NEVER_STARTED, taskError: RUN_GONE_TASK });
    if (failed) {
      reconciled.inc({ reason: e.begun ? 'run_gone' : 'never_started' });
      log.warn(
        { executionId: e.id, workflow: e.workflow, temporalWorkflowId: e.temporal_workflow_id, startedAt: e.started_at.toISOString(), begun: e.begun },
        e.begun
          ? 'execution failed: its Temporal run no longer exists (Temporal does not know its workflow id)'
          : 'execution failed: it never started (Temporal has no run for it: the request that made it was interrupted before starting it)',
      );
    }
    return failed;
  };

  /**
   * Its run closed in Temporal and the row still says running: the run ended without its workflow code writing the
   * end (a terminate runs none; a run timeout stops it where it is). A run writes its end before it closes, so a row
   * read as running before a normal close is finished by now, and the statement (the row must still be running) leaves
   * it. Terminated or cancelled in Temporal (an operator's stop): `stopped`, saying so (with the terminate's reason);
   * closed otherwise: `failed`.
   */
  const failClosed = async (e: UnfinishedExecution, status: string, reason: string | null): Promise<boolean> => {
    const stopped = stoppedInTemporal(status);
    const ended = await failExecutionWithoutRun(
      deps.db,
      e.id,
      stopped
        ? { begun: true, stopped, error: runStopped(status, reason), taskError: runStoppedTask(status, reason) }
        : { begun: true, error: runClosed(status), taskError: runClosedTask(status) },
    );
    if (ended) {
      reconciled.inc({ reason: 'run_closed' });
      log.warn(
        { executionId: e.id, workflow: e.workflow, temporalWorkflowId: e.temporal_workflow_id, startedAt: e.started_at.toISOString(), temporalStatus: status, reason },
        stopped
          ? `execution stopped: its Temporal run was ${closedAs(status)} in Temporal${reasonText(reason)} without recording its end`
          : `execution failed: its Temporal run was ${closedAs(status)} without recording its end`,
      );
    }
    return ended;
  };

  const pass = async (): Promise<number> => {
    const page = await unfinishedExecutions(deps.db, reconcileAfterMs, cursor, PAGE);
    if (!page.length) {
      cursor = undefined;
      return 0;
    }
    let client: Client;
    try {
      client = await deps.temporal.client();
    } catch (err) {
      warn('executions not reconciled: Temporal cannot be reached; none is failed meanwhile', err);
      return 0;
    }
    let failed = 0;
    for (const e of page) {
      if (stopped) return failed; // the service is closing: the rest waits for the next process's walk
      const lookup = await lookUp(client, e);
      // the rest of the page waits for the next pass, from this execution on
      if (lookup.found === 'unreachable') {
        warn('executions not reconciled: Temporal cannot be reached; none is failed meanwhile');
        return failed;
      }
      // any other refusal is no answer either: the execution is left as it is, and looked up again on the next walk
      if (lookup.found === 'error') warn('could not look an execution up in Temporal; left as it is', lookup.err, { executionId: e.id });
      if (lookup.found === 'missing' && (await fail(e))) failed++;
      if (lookup.found === 'closed' && (await failClosed(e, lookup.status, lookup.reason))) failed++;
      cursor = e.cursor;
    }
    if (page.length < PAGE) cursor = undefined;
    failedTries = 0;
    return failed;
  };

  let running: Promise<number> | undefined;
  const runOnce = (): Promise<number> => {
    running ??= pass()
      .catch((err) => {
        warn('execution reconciliation failed; retrying later', err);
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void runOnce(), everyMs);
  timer.unref();
  void runOnce();
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
