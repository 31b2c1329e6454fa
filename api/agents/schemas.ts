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

export const AgentName = Type.String({ minLength: 1, maxLength: AGENT_NAME_MAX_LENGTH, pattern: '^[A-Za-z0-9._-]+$' });

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
