/**
 * A date-time no stored time can hold, in the bodies that carry one: a leap second (`23:59:60`, which JavaScript's Date
 * reads as no time at all) and an instant outside the years 0001–9999 in UTC. Each was a 500 (RangeError, or PostgreSQL
 * refusing `0NaN-…` or `+010000-…`) or came back as `+010000-…`; now a 400 naming the field, and nothing is stored.
 * Queries and bodies that need nothing else are covered for every operation by inputPolicy.test.ts.
 */
import { insertAttempt, createProjectAndTask } from '../support/attempts';
import { startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';

let stack: TestStack;
let attemptId: string;
const UNSTORABLE = ['2026-12-31T23:59:60Z', '2027-06-30T23:59:60+00:00', '9999-12-31T23:59:59-01:00', '0001-01-01T00:00:00+01:00'];

beforeAll(async () => {
  stack = await startTestStack({ services: ['task', 'traces'] });
  const { taskId } = await createProjectAndTask(stack);
  attemptId = await insertAttempt(stack, taskId);
});
afterAll(async () => {
  await stack?.close();
});

const task = (method: 'GET' | 'POST', url: string, payload?: unknown) => stack.app('task').inject({ method, url, payload: payload as object });
const traces = (url: string, payload: unknown) => stack.app('traces').inject({ method: 'POST', url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

test.each(UNSTORABLE)('task service, %s: approval expiresAt, follow-up draft sendAfter and the logs since are 400 naming the field; nothing stored', async (value) => {
  const approval = await task('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'custom', title: 'leap', expiresAt: value });
  expect(approval.statusCode).toBe(400);
  expect(approval.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', details: { expiresAt: expect.stringContaining('date-time') } } });
  const draft = await task('POST', `/api/task-attempts/${attemptId}/follow-up-draft`, { prompt: 'leap', autoSend: true, sendAfter: value });
  expect(draft.statusCode).toBe(400);
  expect(draft.body).toContain('sendAfter');
  const logs = await task('GET', `/api/attempts/${attemptId}/logs?since=${encodeURIComponent(value)}`);
  expect(logs.statusCode).toBe(400);
  expect(logs.body).toContain('since');
  const stored = await stack.db.query("SELECT (SELECT count(*) FROM approvals WHERE title = 'leap')::int AS a, (SELECT count(*) FROM follow_up_drafts WHERE prompt = 'leap')::int AS d");
  expect(stored.rows[0]).toEqual({ a: 0, d: 0 });
});

test.each(UNSTORABLE)('trace service, %s: sentAt and a status timestamp are 400 naming the field; nothing stored', async (value) => {
  const messageId = `leap-${Math.random().toString(36).slice(2)}`;
  const created = await traces('/api/v1/traces', { messageId, instance: 'i1', to: '+15550102000', message: 'hi', sentAt: value });
  expect(created.statusCode).toBe(400);
  expect(created.json()).toEqual({ detail: expect.stringContaining('sentAt') });
  const ok = await traces('/api/v1/traces', { messageId, instance: 'i1', to: '+15550102000', message: 'hi', sentAt: '9999-12-31T23:59:59Z' });
  expect(ok.statusCode).toBe(201);
  expect(ok.json().sentAt).toBe('9999-12-31T23:59:59.000Z');
  const status = await traces(`/api/v1/traces/${ok.json().id}/status`, { status: 'delivered', timestamp: value });
  expect(status.statusCode).toBe(400);
  expect(status.json()).toEqual({ detail: expect.stringContaining('timestamp') });
});
