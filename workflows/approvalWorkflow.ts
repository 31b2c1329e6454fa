/**
 * approvalWorkflow (`approval:<id>`): one approval request from creation to its final status. Responses and the
 * requester's cancel are Temporal updates whose validators refuse what the rules forbid before anything reaches
 * history; expiry is a durable timer, so it happens even when no worker was running at `expiresAt`.
 *
 * A response or cancel that no worker applied within the API's wait comes again as a signal (`respondRecorded`,
 * `cancelRecorded`): Temporal keeps an update that no worker has accepted in memory only, and loses it when it drops
 * the workflow's cached state, while a signal is written to the history at once. The signal is applied under the same
 * rules as the update, when a worker runs the workflow; one the rules refuse then (the request was decided, expired or
 * cancelled meanwhile, or the same update was applied first) changes nothing (docs/approvals.md#no-worker).
 *
 * The API starts it inside the transaction that inserts the request's row, before the COMMIT. It first waits for that
 * transaction's end and ends `not-stored`, doing nothing, when the row was not stored (`approval-waits-for-row`):
 * before, its first activity inserted the row itself, so a create answered 503 (the COMMIT failed, or Temporal's start
 * answered late) still became an approval, and a client that sent it again as told got two.
 */
import { ApplicationFailure, allHandlersFinished, condition, defineQuery, defineSignal, defineUpdate, patched, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { ApprovalDecision, ApprovalFinalStatus, ApprovalStatus, ApprovalType } from '../lib/db/approvals';

const { approvalRecordStored, recordApproval, recordApprovalResponse, closeApprovalRecord } = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  // projection writes retry until PostgreSQL is back; they are idempotent
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});


export interface ApprovalRequest {
  id: string;
  taskAttemptId: string;
  type: ApprovalType;
  title: string;
  description: string | null;
  metadata: Record<string, unknown>;
  /** null = any user may answer, and one approval approves */
  approvers: string[] | null;
  expiresAt: string | null;
  createdBy: string;
  createdAt: string;
}

export interface ApprovalResponse {
  approver: string;
  decision: ApprovalDecision;
  comment: string;
  respondedAt: string;
}

export interface RespondInput {
  user: string;
  decision: ApprovalDecision;
  comment: string;
}

export interface RespondResult {
  approvalId: string;
  decision: ApprovalDecision;
  comment: string;
  respondedAt: string;
  approvalStatus: ApprovalStatus;
}

export interface ApprovalState {
  status: ApprovalStatus;
  responses: ApprovalResponse[];
}

/** Failure types the validators use; the API maps them to HTTP in one place (api/http/temporalErrors.ts). */
export const FORBIDDEN = 'FORBIDDEN';
export const CONFLICT = 'CONFLICT';

export const respondUpdate = defineUpdate<RespondResult, [RespondInput]>('respond');
export const cancelApprovalUpdate = defineUpdate<ApprovalState, [{ user: string }]>('cancel');
export const approvalStateQuery = defineQuery<ApprovalState>('state');
/** The same response or cancel, recorded in the history by the API when no worker applied the update within its wait. */
export const respondRecordedSignal = defineSignal<[RespondInput]>('respondRecorded');
export const cancelRecordedSignal = defineSignal<[{ user: string }]>('cancelRecorded');

/** How a request's workflow ends: its final status, or `not-stored` when its row never committed (or went with its attempt before the workflow first looked). */
export type ApprovalWorkflowResult = ApprovalFinalStatus | 'not-stored';

export async function approvalWorkflow(request: ApprovalRequest): Promise<ApprovalWorkflowResult> {
  let status: ApprovalState['status'] = 'pending';
  const responses: ApprovalResponse[] = [];

  const refuse = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });
  const requirePending = () => {
    if (status !== 'pending') throw refuse(CONFLICT, `Approval ${request.id} is ${status}, no longer pending`);
    // Past expiresAt (the workflow's clock: when this workflow task started) a request is expired, also while its
    // timer has not fired here yet. After Temporal or every worker was away at the expiry, the timer's firing and a
    // response sent meanwhile arrive in one workflow task, whose updates are handled before the timer: the response
    // used to approve a request after its expiry. Validators do not run on replay, so histories are unchanged.
    if (request.expiresAt !== null && Date.now() >= Date.parse(request.expiresAt)) throw refuse(CONFLICT, `Approval ${request.id} is expired, no longer pending`);
  };

  setHandler(approvalStateQuery, () => ({ status, responses }));

  const validateResponse = ({ user }: RespondInput) => {
    if (request.approvers !== null && !request.approvers.includes(user)) throw refuse(FORBIDDEN, `${user} is not an approver of approval ${request.id}`);
    requirePending();
    if (responses.some((r) => r.approver === user)) throw refuse(CONFLICT, `${user} has already responded to approval ${request.id}`);
  };
  const respond = async ({ user, decision, comment }: RespondInput): Promise<RespondResult> => {
    const respondedAt = new Date().toISOString();
    responses.push({ approver: user, decision, comment, respondedAt });
    if (decision === 'rejected') status = 'rejected';
    else if (request.approvers === null || request.approvers.every((a) => responses.some((r) => r.approver === a && r.decision === 'approved')))
      status = 'approved';
    // the answer is what this response made of the request, taken before the projection write: a response of
    // another approver accepted meanwhile moves `status` on (docs/approvals.md, "What a response answers")
    const approvalStatus = status;
    await recordApprovalResponse({
      approvalId: request.id,
      approver: user,
      decision,
      comment,
      respondedAt,
      close: approvalStatus === 'pending' ? null : approvalStatus,
    });
    return { approvalId: request.id, decision, comment, respondedAt, approvalStatus };
  };
  const validateCancel = ({ user }: { user: string }) => {
    if (user !== request.createdBy) throw refuse(FORBIDDEN, `Only the requester (${request.createdBy}) may cancel approval ${request.id}`);
    requirePending();
  };
  const cancel = async (): Promise<ApprovalState> => {
    status = 'cancelled';
    await closeApprovalRecord({ approvalId: request.id, status: 'cancelled', at: new Date().toISOString() });
    return { status, responses };
  };
  /** A recorded request is applied when the update's validator would take it now; refused, it changes nothing. */
  const whenValid = (validate: () => void) => {
    try {
      validate();
      return true;
    } catch {
      return false;
    }
  };

  setHandler(respondUpdate, respond, { validator: validateResponse });
  setHandler(cancelApprovalUpdate, cancel, { validator: validateCancel });
  // each changes the state before its first await, as the updates do: of a held update and its recorded signal,
  // whichever the workflow handles first applies, and the other is refused
  setHandler(respondRecordedSignal, async (input) => {
    if (whenValid(() => validateResponse(input))) await respond(input);
  });
  setHandler(cancelRecordedSignal, async (input) => {
    if (whenValid(() => validateCancel(input))) await cancel();
  });

  if (patched('approval-waits-for-row')) {
    // no row: its transaction did not commit (its request was answered 503, or not at all), or the row went with its
    // attempt since. Nobody can answer it; no event, nothing counted. A response cannot have come: the routes answer
    // 404 for a request without a row.
    if (!(await approvalRecordStored({ approvalId: request.id }))) {
      status = 'cancelled';
      return 'not-stored';
    }
  } else if ((await recordApproval(request)) === false) {
    // runs started before the patch upsert the row. False: the attempt is gone, and the request's row with it (or it
    // never committed). A history from before recordApproval answered has no result here (undefined) and goes on.
    status = 'cancelled';
    return status;
  }

  const decidedInTime =
    request.expiresAt === null
      ? await condition(() => status !== 'pending').then(() => true)
      : await condition(() => status !== 'pending', Math.max(1, Date.parse(request.expiresAt) - Date.now()));
  if (!decidedInTime && status === 'pending') {
    status = 'expired';
    await closeApprovalRecord({ approvalId: request.id, status: 'expired', at: new Date().toISOString() });
  }
  // let an update that decided the request finish its projection write before the workflow completes
  await condition(allHandlersFinished);
  return status as ApprovalFinalStatus;
}
