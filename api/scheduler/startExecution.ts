/**
 * Starts an execution on request (a manual run or a retry): writes the execution row (`running`, tasks `pending`),
 * then starts workflowRunWorkflow as `execution:<id>` (within TEMPORAL_CALL_TIMEOUT_MS) and answers without waiting for
 * the run. A start Temporal does not answer in time is a 503 only once the row says the run never started, so a run
 * Temporal starts later anyway does nothing; a run that began meanwhile is the 200 (docs/scheduler.md#temporal-deadlines).
 * So is a start so slow that the execution reconciler, finding no run, failed the row meanwhile. A workflow deleted
 * after the caller read it (or the execution a retry re-runs, deleted with it) is a 404 `goneDetail`: before the row
 * is written, nothing is started (the row cannot be written once the deletion committed); after it, the row is read
 * again once the run is started, so the answer never names an execution its workflow's deletion had already removed
 * (the run started meanwhile finds its workflow gone and ends at once, sending and writing nothing). An answer is a
 * 200 only when the row was there after the run started: a deletion after that lists the run and stops it like any
 * other (docs/scheduler.md#deleting).
 */
import type { FastifyBaseLogger } from 'fastify';
import { notFound } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { failUnbegunExecution, getExecution, insertManualExecution } from '../../lib/db/schedulerExecutions';
import type { WorkflowRow } from '../../lib/db/schedulerWorkflows';
import { WORKFLOW_RUN_TYPE, workflowSearchAttributes, type WorkflowRunInput } from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import { temporalClient, temporalUnavailable, withinDeadline } from './temporalAccess';
import { RUN_PATHS } from '../../lib/scheduler/runPaths';

const COULD_NOT_START = 'Could not start the execution';

export async function startExecution(
  deps: DetailServiceDeps,
  w: WorkflowRow,
  opts: { input?: unknown; retryOf?: string; goneDetail: string },
  log: FastifyBaseLogger,
): Promise<{ executionId: string; workflow: string; status: 'running'; startedAt: string }> {
  const client = await temporalClient(deps, COULD_NOT_START);
  const executionId = newId();
  const startedAt = new Date().toISOString();
  const workflowId = `execution:${executionId}`;
  const input = opts.input ?? null;
  const inserted = await insertManualExecution(deps.db, {
    id: executionId,
    workflow: w.name,
    workflowId: w.id,
    temporalWorkflowId: workflowId,
    startedAt,
    tasks: w.tasks.map((t) => ({ name: t.name, type: t.type, status: 'pending', startedAt: null, completedAt: null, output: '' })),
    input,
    retryOf: opts.retryOf,
  });
  if (!inserted) throw notFound(opts.goneDetail);
  const args: WorkflowRunInput = {
    workflow: w.name,
    workflowId: w.id,
    trigger: 'manual',
    executionId,
    startedAt,
    ...(input !== null ? { input } : {}),
    ...(opts.retryOf ? { retryOf: opts.retryOf } : {}),
    paths: RUN_PATHS,
  };
  try {
    await withinDeadline(client, COULD_NOT_START, () =>
      client.workflow.start(WORKFLOW_RUN_TYPE, {
        workflowId,
        taskQueue: deps.config.temporal.taskQueue,
        args: [args],
        typedSearchAttributes: workflowSearchAttributes(w.name),
      }),
    );
  } catch (err) {
    log.warn({ err: { message: (err as Error).message }, workflow: w.name }, 'starting an execution failed');
    // Temporal may still start the run (the request reached it, the answer did not): either the run has begun by now
    // (the answer is the 200 below) or its row says it never started, and the run ends at once when it begins
    if (await failUnbegunExecution(deps.db, executionId, COULD_NOT_START)) throw temporalUnavailable(COULD_NOT_START);
  }
  // the workflow was deleted between the row's insert and the start (the deletion found no run to stop yet)
  const row = await getExecution(deps.db, executionId);
  if (!row) throw notFound(opts.goneDetail);
  // the start took longer than scheduler.reconcileAfterSeconds and the reconciler, finding no run, failed the row
  // before any task began: the run, if Temporal has it now, ends at once when it begins (executionReconciler.ts)
  if (row.status === 'failed' && row.tasks.every((t) => t.status === 'pending')) throw temporalUnavailable(COULD_NOT_START);
  return { executionId, workflow: w.name, status: 'running', startedAt };
}
