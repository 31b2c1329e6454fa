/** Schemas shared by the multi-agent service's routes. */
import { Type } from 'typebox';
import { AGENT_NAME_MAX_LENGTH } from '../../lib/config';
import { Nullable, StringEnum, Timestamp } from '../http/schemas';

export const DetailError = Type.Object({ detail: Type.String() });

/** The `{detail}` error responses every route may give. */
export const DetailErrorResponses = {
  400: DetailError,
  401: DetailError,
  404: DetailError,
  500: DetailError,
  503: DetailError,
};

/**
 * An agent's name as the routes take it: the config's rule (lib/agents/agentRoster.ts), `[A-Za-z0-9._-]`, 1–200
 * characters, and not `.` or `..` (no agent can be so named; the pattern says it without a lookahead, like the
 * scheduler's WORKFLOW_NAME, so the OpenAPI document and schemathesis agree with it).
 */
export const AGENT_NAME_PATTERN = '^([A-Za-z0-9_-][A-Za-z0-9._-]*|\\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+)$';

export const AgentName = Type.String({ minLength: 1, maxLength: AGENT_NAME_MAX_LENGTH, pattern: AGENT_NAME_PATTERN, description: 'letters, digits, `.`, `_`, `-`; not `.` or `..`' });

export const PRIORITY_INPUTS = ['high', 'normal', 'medium', 'low'] as const;
export const TASK_STATUS_VALUES = ['assigned', 'running', 'completed', 'failed'] as const;

export const AgentTask = Type.Object({
  taskId: Type.String(),
  agent: Type.String(),
  task: Type.String(),
  priority: StringEnum(['high', 'normal', 'low'] as const),
  status: StringEnum(TASK_STATUS_VALUES),
  result: Nullable(Type.String()),
  error: Nullable(Type.String()),
  createdAt: Timestamp,
  startedAt: Nullable(Timestamp),
  completedAt: Nullable(Timestamp),
});

export const MemoryEntry = Type.Object({
  id: Type.String(),
  content: Type.String(),
  agent: Nullable(Type.String()),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  createdAt: Timestamp,
});
