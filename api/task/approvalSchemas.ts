/** Schemas of /api/approvals. */
import { Type } from 'typebox';
import { APPROVAL_DECISIONS, APPROVAL_STATUSES, APPROVAL_TYPES } from '../../lib/db/approvals';
import { NAME_PATTERN, TEXT_PATTERN } from '../http/inputPolicy';
import { Id, Nullable, PageQuery, StringEnum, Timestamp } from '../http/schemas';

export const ApprovalResponseSchema = Type.Object({
  approver: Type.String(),
  decision: StringEnum(APPROVAL_DECISIONS),
  comment: Type.String(),
  respondedAt: Type.String(),
});

export const Approval = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  // read through the attempt (the approval has no column for them), so that a client can link the request to its task
  taskId: Type.String({ description: 'the task of the attempt (taskAttemptId) the approval belongs to' }),
  projectId: Type.String({ description: "that task's project" }),
  taskTitle: Type.String({ description: "that task's title as it is now (a rename shows)" }),
  type: StringEnum(APPROVAL_TYPES),
  title: Type.String(),
  description: Nullable(Type.String()),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  approvers: Nullable(Type.Array(Type.String())),
  expiresAt: Nullable(Type.String()),
  status: StringEnum(APPROVAL_STATUSES),
  createdBy: Type.String(),
  createdAt: Type.String(),
  decidedAt: Nullable(Type.String()),
  /** why it was closed when its workflow was closed from Temporal's side (docs/approvals.md); else null */
  closedReason: Nullable(Type.String()),
  responses: Type.Array(ApprovalResponseSchema),
});

const Email = Type.String({ minLength: 3, maxLength: 320, pattern: '^[^\\s@]+@[^\\s@]+$' });

export const CreateApprovalBody = Type.Object(
  {
    taskAttemptId: Id(),
    type: StringEnum(APPROVAL_TYPES),
    // stored trimmed, so it needs a character that is not white space (as task titles do); a blank one was stored ""
    title: Type.String({ minLength: 1, maxLength: 500, pattern: NAME_PATTERN }),
    description: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    approvers: Type.Optional(Type.Array(Email, { minItems: 1, maxItems: 100 })),
    expiresAt: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);

export const RespondBody = Type.Object(
  { decision: StringEnum(APPROVAL_DECISIONS), comment: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })) },
  { additionalProperties: false },
);

export const RespondResultSchema = Type.Object({
  approvalId: Type.String(),
  decision: StringEnum(APPROVAL_DECISIONS),
  comment: Type.String(),
  respondedAt: Type.String(),
  approvalStatus: StringEnum(APPROVAL_STATUSES, {
    description: 'the status this response left the request in (pending while others still have to approve); never a later status another response made (docs/approvals.md)',
  }),
});

export const PendingQuery = Type.Object({ type: Type.Optional(StringEnum(APPROVAL_TYPES)), ...PageQuery }, { additionalProperties: false });
