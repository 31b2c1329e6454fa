/**
 * Approval routes: create (starts approvalWorkflow), detail, respond and cancel (Temporal updates), and the current
 * user's pending list and history (SQL over the projection). See docs/approvals.md.
 */
import crypto from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { status as grpcStatus } from '@grpc/grpc-js';
import { WorkflowUpdateRPCTimeoutOrCancelledError, type Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import { encodeToPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { AppError, conflict, forbidden, notFound, validationError } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { closeApprovalOfClosedWorkflow } from '../../lib/approvals/closedWorkflows';
import { approvalMetrics } from '../../lib/approvals/metrics';
import { getApproval, insertApproval, listHistoryFor, listPendingFor, listResponses, lockApprovalInsert, type ApprovalRow, type ApprovalResponseRow, type ApprovalWithTaskRow } from '../../lib/db/approvals';
import { lockAttemptKey } from '../../lib/db/attempts';
import { withTransaction } from '../../lib/db/pool';
import { withinTemporalBound } from '../../lib/temporal/temporalBound';
import { approvalWorkflow, cancelApprovalUpdate, cancelRecordedSignal, respondRecordedSignal, respondUpdate, type ApprovalRequest } from '../../workflows/approvalWorkflow';
import { actingUser } from '../http/actingUser';
import { ok, okPage, pagination } from '../http/envelope';
import { Envelope, ErrorResponses, IdParams, PagedEnvelope } from '../http/schemas';
import { callTemporal } from '../http/temporalErrors';
import { releasedWhenPostgresDown } from '../http/workerWait';
import { Approval, CreateApprovalBody, PendingQuery, RespondBody, RespondResultSchema } from './approvalSchemas';
import type { TaskPluginOptions } from './deps';

export const approvalWorkflowId = (id: string) => `approval:${id}`;

/** How long a response or cancel waits for a worker to apply it, unless `approvals.workerWaitMs` says (docs/approvals.md#no-worker). */
export const APPROVAL_WORKER_WAIT_MS = 15_000;

/**
 * The update id of a response: the same answer (user, decision, comment) sent again is the same update, so a retry
 * after a 503 joins the first request while Temporal still holds it instead of adding a second one (Temporal keeps
 * one update per id and workflow run). Another answer by the same user is another update, which the validator
 * refuses once the first is applied.
 */
export function respondUpdateId(user: string, decision: string, comment: string): string {
  return `respond:${crypto.createHash('sha256').update(JSON.stringify([user, decision, comment])).digest('hex').slice(0, 32)}`;
}
export const cancelUpdateId = (user: string) => `cancel:${crypto.createHash('sha256').update(user).digest('hex').slice(0, 32)}`;

/** How long recording a response or cancel that no worker applied (a signal) may take before the outcome is unknown. */
export const APPROVAL_RECORD_WAIT_MS = 5000;

/**
 * The 503 of a response or cancel no worker applied within the wait and that could not be recorded either (Temporal
 * did not answer the signal): Temporal may still hold the update and apply it, or have lost it.
 */
export function noWorkerApplied(what: 'response' | 'cancel', id: string, waitMs: number): AppError {
  const seconds = Math.round(waitMs / 100) / 10;
  return new AppError(
    503,
    'SERVICE_UNAVAILABLE',
    `No worker applied this ${what} to approval ${id} within ${seconds} s (no worker is running, or Temporal did not answer), ` +
      `and Temporal did not confirm recording it, so it may or may not have been applied when a worker comes. ` +
      `Read the approval; while it is pending, send the same request again (it is recorded once and applied at most once)`,
    { outcome: 'unknown', waitedMs: waitMs },
  );
}

/**
 * The 503 of a response or cancel no worker applied within the wait, recorded in the approval's workflow history (a
 * signal): a worker applies it when one runs the workflow, under the same rules as the update, unless the approval is
 * closed first (docs/approvals.md#no-worker).
 */
export function noWorkerRecorded(what: 'response' | 'cancel', id: string, waitMs: number): AppError {
  const seconds = Math.round(waitMs / 100) / 10;
  return new AppError(
    503,
    'SERVICE_UNAVAILABLE',
    `No worker applied this ${what} to approval ${id} within ${seconds} s (no worker is running, or none took it in time): ` +
      `it is recorded, and a worker applies it when one comes, under the same rules (not once the approval is closed: decided, ` +
      `expired or cancelled). Read the approval to see it applied; the same request sent again is recorded once and applied at most once`,
    { outcome: 'recorded', waitedMs: waitMs },
  );
}

/**
 * A create whose COMMIT's outcome is unknown (PostgreSQL ended the session with the COMMIT sent, or stopped answering
 * while it was on its way) is stored or not, and the client cannot tell which from the answer alone: the 503 names the
 * approval's id (`details.approvalId`), so that the client reads it — a 404 once PostgreSQL answers means it was not
 * stored (its workflow ends doing nothing) and may be sent again. Any other error as it is.
 */
export function outcomeUnknownNaming(err: unknown, id: string): unknown {
  if (!(err instanceof AppError) || err.statusCode !== 503 || err.details?.outcome !== 'unknown') return err;
  return new AppError(
    503,
    err.code,
    `${err.message}. The approval's id is ${id}: GET /api/approvals/${id} answers 404 if it was not stored (then send it again), 200 if it was`,
    { ...err.details, approvalId: id },
  );
}

export function approvalView(a: ApprovalWithTaskRow, responses: ApprovalResponseRow[]) {
  return {
    id: a.id,
    taskAttemptId: a.task_attempt_id,
    taskId: a.task_id,
    projectId: a.project_id,
    taskTitle: a.task_title,
    type: a.type,
    title: a.title,
    description: a.description,
    metadata: a.metadata,
    approvers: a.approvers,
    expiresAt: a.expires_at?.toISOString() ?? null,
    status: a.status,
    createdBy: a.created_by,
    createdAt: a.created_at.toISOString(),
    decidedAt: a.decided_at?.toISOString() ?? null,
    closedReason: a.closed_reason,
    responses: responses.map((r) => ({ approver: r.approver, decision: r.decision, comment: r.comment, respondedAt: r.responded_at.toISOString() })),
  };
}

/** What records a response or cancel that no worker applied: its signal, the update's input and the update's id. */
interface Recorded<A> {
  signal: SignalDefinition<[A]>;
  input: A;
  updateId: string;
}

/** The 409 for a request that is closed, with why when its workflow was closed from Temporal's side. */
const closedError = (a: ApprovalRow) => conflict(`Approval ${a.id} is ${a.status}, no longer pending${a.closed_reason ? `: ${a.closed_reason}` : ''}`);

export const approvalRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const tags = ['approvals'];
  const workerWaitMs = deps.config.file.approvals?.workerWaitMs ?? APPROVAL_WORKER_WAIT_MS;

  /**
   * A Temporal update of the approval's workflow, waited for at most `workerWaitMs`: an update is applied by a worker,
   * and with none running Temporal holds it in memory only (an update that no worker has accepted is lost when Temporal
   * drops the workflow's cached state: a restart, an eviction, an error on it). Past the wait the same request is
   * recorded as a signal (`recorded`), which the history keeps, and the answer is the 503 of noWorkerRecorded (or of
   * noWorkerApplied when Temporal did not take the signal either). The update's own refusals and a gone workflow as
   * callTemporal maps them.
   */
  const applied = async <T, A>(client: Client, what: 'response' | 'cancel', id: string, update: () => Promise<T>, recorded: Recorded<A>): Promise<T> => {
    try {
      // the response or cancel is recorded by the worker: a PostgreSQL outage meanwhile is a 503 now, not a wait as long as it lasts
      return await releasedWhenPostgresDown(deps.dependencies, () =>
        client.connection.withDeadline(Date.now() + workerWaitMs, () => callTemporal(update, { whenGone: closedConflict(id) })),
      );
    } catch (err) {
      if (!(err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)) throw err;
    }
    throw await recordForWorker(client, what, id, recorded);
  };

  /**
   * Records a response or cancel no worker applied as its signal, with the update's id as the signal's request id:
   * Temporal writes a signal to the history before it answers, and takes one signal per request id and workflow run,
   * so repeats record it once. The error to answer with.
   */
  const recordForWorker = async <A>(client: Client, what: 'response' | 'cancel', id: string, recorded: Recorded<A>): Promise<AppError> => {
    try {
      const payloads = await encodeToPayloads(client.options.loadedDataConverter, recorded.input);
      await client.connection.withDeadline(Date.now() + APPROVAL_RECORD_WAIT_MS, () =>
        client.workflowService.signalWorkflowExecution({
          namespace: client.options.namespace,
          workflowExecution: { workflowId: approvalWorkflowId(id) },
          signalName: recorded.signal.name,
          input: { payloads },
          identity: client.options.identity,
          requestId: recorded.updateId,
        }),
      );
      return noWorkerRecorded(what, id, workerWaitMs);
    } catch (err) {
      // the workflow ended meanwhile (closed from Temporal's side): the request is closed
      if ((err as { code?: unknown }).code === grpcStatus.NOT_FOUND) return closedConflict(id)();
      return noWorkerApplied(what, id, workerWaitMs);
    }
  };

  const load = async (id: string) => {
    const a = await getApproval(deps.db, id);
    if (!a) throw notFound(`Approval ${id} not found`);
    return a;
  };
  const detail = async (id: string) => {
    const a = await load(id);
    return approvalView(a, await listResponses(deps.db, id));
  };
  /**
   * The early answer for a request that cannot take a response or a cancel any more: closed, or past its expiry
   * although nobody has marked it expired yet (no worker ran its timer: Temporal or every worker is away). The
   * validator decides the rest.
   */
  const requireOpen = (a: ApprovalRow) => {
    if (a.status !== 'pending') throw closedError(a);
    if (a.expires_at && a.expires_at.getTime() <= Date.now()) throw conflict(`Approval ${a.id} is expired, no longer pending`);
  };
  /**
   * A workflow that is gone means the request was closed: answer with its projected status. One still pending had
   * its workflow closed from Temporal's side (terminated): it is recorded now (cancelled, or expired when its expiry
   * had passed by the close), as the closed-workflow reconciler would on its next pass (docs/approvals.md, "Closed
   * from Temporal's side").
   */
  const closedConflict = (id: string) => async () => {
    let a = await load(id);
    const recorded = a.status === 'pending' && (await closeApprovalOfClosedWorkflow(deps.db, await deps.temporal.client(), id));
    if (recorded) {
      approvalMetrics(deps.metrics.registry).decided.inc({ status: recorded });
      a = await load(id);
    }
    return closedError(a);
  };

  // registered before /approvals/:id; find-my-way prefers the static segment anyway
  app.get(
    '/approvals/pending',
    { schema: { tags, querystring: PendingQuery, response: { 200: PagedEnvelope(Approval), ...ErrorResponses } } },
    async (request) => {
      const { type, page, limit } = request.query;
      const user = actingUser(request, deps.localUser);
      const { rows, total } = await listPendingFor(deps.db, user, { type, limit, offset: (page - 1) * limit });
      const views = await Promise.all(rows.map(async (r) => approvalView(r, await listResponses(deps.db, r.id))));
      return okPage(version, views, pagination(page, limit, total));
    },
  );

  app.get(
    '/approvals/history',
    { schema: { tags, querystring: PendingQuery, response: { 200: PagedEnvelope(Approval), ...ErrorResponses } } },
    async (request) => {
      const { type, page, limit } = request.query;
      const user = actingUser(request, deps.localUser);
      const { rows, total } = await listHistoryFor(deps.db, user, { type, limit, offset: (page - 1) * limit });
      const views = await Promise.all(rows.map(async (r) => approvalView(r, await listResponses(deps.db, r.id))));
      return okPage(version, views, pagination(page, limit, total));
    },
  );

  app.post(
    '/approvals',
    { schema: { tags, body: CreateApprovalBody, response: { 201: Envelope(Approval), ...ErrorResponses } } },
    async (request, reply) => {
      const b = request.body;
      const input: ApprovalRequest = {
        id: newId(),
        taskAttemptId: b.taskAttemptId,
        type: b.type,
        title: b.title.trim(),
        description: b.description ?? null,
        metadata: b.metadata ?? {},
        approvers: b.approvers ? [...new Set(b.approvers.map((e) => e.trim().toLowerCase()))] : null,
        expiresAt: b.expiresAt ? new Date(b.expiresAt).toISOString() : null,
        createdBy: actingUser(request, deps.localUser),
        createdAt: new Date().toISOString(),
      };
      // the row and approval.created commit only when the workflow started; the workflow waits for this
      // transaction's end (the advisory lock) and ends doing nothing when the row did not commit, so a create
      // answered 503 leaves no approval behind and may be sent again (docs/approvals.md, "Create"). The client is had
      // before the transaction (connecting waits with nothing locked), and the start is bounded by
      // config.temporalInTransactionMs: a Temporal that does not answer in time is that 503, not a transaction left
      // open until PostgreSQL ends it
      const client = await deps.temporal.client();
      await withTransaction(deps.db, async (c) => {
        // the attempt's key-share lock, held to the commit: a delete of the attempt locks its row, so it comes after
        // this and finds the approval (and cancels its workflow), or came before and this is a 404 without a workflow
        if (!(await lockAttemptKey(c, b.taskAttemptId))) throw notFound(`Task attempt ${b.taskAttemptId} not found`);
        if (b.expiresAt && Date.parse(b.expiresAt) <= Date.now()) throw validationError('expiresAt must be in the future', { expiresAt: 'must be in the future' });
        await insertApproval(c, input);
        await lockApprovalInsert(c, input.id);
        await withinTemporalBound(client, deps.config.temporalInTransactionMs, () =>
          callTemporal(() =>
            client.workflow.start(approvalWorkflow, {
              workflowId: approvalWorkflowId(input.id),
              taskQueue: deps.config.temporal.taskQueue,
              args: [input],
            }),
          ),
        );
      }).catch((err: unknown) => {
        throw outcomeUnknownNaming(err, input.id);
      });
      return reply.code(201).send(ok(version, await detail(input.id)));
    },
  );

  app.get('/approvals/:id', { schema: { tags, params: IdParams, response: { 200: Envelope(Approval), ...ErrorResponses } } }, async (request) =>
    ok(version, await detail(request.params.id)),
  );

  app.post(
    '/approvals/:id/respond',
    { schema: { tags, params: IdParams, body: RespondBody, response: { 200: Envelope(RespondResultSchema), ...ErrorResponses } } },
    async (request) => {
      const { id } = request.params;
      const a = await load(id);
      const user = actingUser(request, deps.localUser);
      // the validator decides; these checks of the projection only answer early
      if (a.approvers !== null && !a.approvers.includes(user)) throw forbidden(`${user} is not an approver of approval ${id}`);
      // before the status: a response sent again after a 503 (applied meanwhile) gets the same 409 whether or not it
      // closed the request
      if ((await listResponses(deps.db, id)).some((r) => r.approver === user)) throw conflict(`${user} has already responded to approval ${id}`);
      requireOpen(a);
      const client = await deps.temporal.client();
      const handle = client.workflow.getHandle(approvalWorkflowId(id));
      const input = { user, decision: request.body.decision, comment: request.body.comment ?? '' };
      const updateId = respondUpdateId(user, input.decision, input.comment);
      const result = await applied(client, 'response', id, () => handle.executeUpdate(respondUpdate, { args: [input], updateId }), {
        signal: respondRecordedSignal,
        input,
        updateId,
      });
      return ok(version, result);
    },
  );

  app.post(
    '/approvals/:id/cancel',
    { schema: { tags, params: IdParams, response: { 200: Envelope(Approval), ...ErrorResponses } } },
    async (request) => {
      const { id } = request.params;
      const a = await load(id);
      const user = actingUser(request, deps.localUser);
      requireOpen(a);
      const client = await deps.temporal.client();
      const handle = client.workflow.getHandle(approvalWorkflowId(id));
      const updateId = cancelUpdateId(user);
      await applied(client, 'cancel', id, () => handle.executeUpdate(cancelApprovalUpdate, { args: [{ user }], updateId }), {
        signal: cancelRecordedSignal,
        input: { user },
        updateId,
      });
      return ok(version, await detail(id));
    },
  );
};
