/**
 * The client messages of the `/ws` task channel (docs/attempts.md, "Streams"): `{type: subscribe|unsubscribe, channel:
 * tasks, taskId?}` and `{type: ping}`. Anything else a client sends (any JSON value, or none) is answered with an
 * error message on the socket and never throws: the socket's message handler runs outside any request, where an
 * exception would stop the whole process.
 */
import { lowerCaseUuids } from '../../lib/ids';
import { MAX_PATH_PARAM_LENGTH } from '../http/inputPolicy';

/** Distinct subscriptions one socket may hold (each task id, and `*` for every task). */
export const MAX_TASK_SUBSCRIPTIONS = 100;

/** The longest task id a message may name: the task routes' path parameter limit. */
const MAX_TASK_ID_LENGTH = MAX_PATH_PARAM_LENGTH;

export type TaskChannelMessage = { type: 'ping' } | { type: 'subscribe' | 'unsubscribe'; taskId: string | null };

const EXPECTED = 'expected {type: subscribe|unsubscribe, channel: tasks, taskId?} or {type: ping}';

/** The message in `raw`, or the error text to send back. */
export function parseTaskChannelMessage(raw: string): { message: TaskChannelMessage } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { error: 'messages must be JSON' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: `${EXPECTED}; got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` };
  const m = value as Record<string, unknown>;
  if (m.type === 'ping') return { message: { type: 'ping' } };
  if ((m.type !== 'subscribe' && m.type !== 'unsubscribe') || m.channel !== 'tasks') return { error: EXPECTED };
  if (m.taskId === undefined || m.taskId === null) return { message: { type: m.type, taskId: null } };
  if (typeof m.taskId !== 'string' || m.taskId.length === 0 || m.taskId.length > MAX_TASK_ID_LENGTH) {
    return { error: `taskId must be a task id (a string of 1 to ${MAX_TASK_ID_LENGTH} characters), or left out for every task` };
  }
  // a task id in upper or mixed case names the same task, as in the routes' parameters
  return { message: { type: m.type, taskId: lowerCaseUuids(m.taskId) } };
}
