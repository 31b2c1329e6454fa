/**
 * Deliveries under way at a deploy: their activity was scheduled with the retry policy of the workflow code that
 * started them, which Temporal keeps for that activity (8 attempts before the delivery policy moved into the
 * activity). A worker running that old workflow code (test/support/webhookDeliveryWorkflowV8.ts) starts the
 * deliveries; today's worker takes over while they retry. Today's workflow schedules the activity again when those 8
 * attempts run out (patch webhook-old-retry-policy-continues), so the delivery follows today's policy: a receiver that
 * answers on the 10th request gets the event (before, the delivery gave up after 8). The task service (whose
 * dispatcher starts the deliveries) runs in this process; pauses are 1–2 s (webhooks.backoff*), the breaker kept shut.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { publishEvent } from '../../lib/events/publish';
import type { RunningWorkers } from '../../workers/createWorker';
import { recordHistory } from '../support/attemptHelpers';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

jest.setTimeout(240_000);

let stack: TestStack;
let receiver: http.Server;
let oldCode: string;
let workers: RunningWorkers | undefined;
/** X-Armada-Attempt of each request, per path */
const arrivals = new Map<string, number[]>();
/** /flaky answers 500 to this many requests, then 200; /down always answers 503 */
const FLAKY_FAILURES = 9;

const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => stack.app('task').inject({ method, url, payload: payload as object });
const hookUrl = (p: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${p}`;

async function hookAndEvent(p: string, event: 'approval.cancelled' | 'approval.expired'): Promise<{ hookId: string; workflowId: string }> {
  const created = await inject('POST', '/api/webhooks', { url: hookUrl(p), events: [event], secret: 'whsec-old-policy-0123' });
  expect(created.statusCode).toBe(201);
  const hookId = created.json().data.id as string;
  const ev = await publishEvent(stack.db, { type: event, topics: [], data: { approvalId: hookId } });
  return { hookId, workflowId: `webhook:${hookId}:${ev.seq}` };
}

const triesOf = async (hookId: string) =>
  ((await inject('GET', `/api/webhooks/${hookId}/deliveries?limit=100`)).json().data as { attempt: number; statusCode: number | null }[])
    .sort((a, b) => a.attempt - b.attempt)
    .map((d) => [d.attempt, d.statusCode]);

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const p = req.url ?? '';
      const seen = arrivals.get(p) ?? [];
      seen.push(Number(req.headers['x-armada-attempt']));
      arrivals.set(p, seen);
      res.writeHead(p === '/flaky' && seen.length > FLAKY_FAILURES ? 200 : p === '/flaky' ? 500 : 503).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  // openAfterFailures above any count here: this file is about the attempts, not the breaker
  stack = await startTestStack({ services: ['task'], worker: false, file: { webhooks: { backoffInitialMs: 1000, backoffMaxMs: 2000, openAfterFailures: 1000 } } });
  oldCode = (await bundleWorkflowCode({ workflowsPath: path.join(__dirname, '..', 'support', 'webhookDeliveryWorkflowV8.ts'), logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } })).code;
}, 180_000);

afterAll(async () => {
  await workers?.stop();
  await stack?.close();
  await new Promise((r) => receiver.close(r));
});

test('under the old workflow code alone, a delivery ends after 8 attempts (the history today\'s code must replay)', async () => {
  workers = await startStackWorkers(stack, { workflowBundle: { code: oldCode } });
  try {
    const { hookId, workflowId } = await hookAndEvent('/down', 'approval.expired');
    const handle = (await stack.temporal.client()).workflow.getHandle(workflowId);
    const err = await eventually(async () => handle.result().then(() => ({ resolved: true }) as const, (e: unknown) => (e instanceof WorkflowNotFoundError ? undefined : e)), 60_000);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(((err as WorkflowFailedError).cause as ApplicationFailure).message).toBe(`gave up: delivery to webhook ${hookId}: HTTP 503`);
    expect(await triesOf(hookId)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => [n, 503]));
    await recordHistory(stack, workflowId, 'webhook-gave-up-after-8-attempts');
  } finally {
    await workers.stop();
    workers = undefined;
  }
});

test('a delivery started by the old code and taken over by today\'s worker goes past 8 attempts and is delivered on the 10th', async () => {
  workers = await startStackWorkers(stack, { workflowBundle: { code: oldCode } });
  const { hookId, workflowId } = await hookAndEvent('/flaky', 'approval.cancelled');
  const handle = (await stack.temporal.client()).workflow.getHandle(workflowId);
  // the old code scheduled the activity (8 attempts at most) and its first try failed: the deploy happens now
  await eventually(async () => (arrivals.get('/flaky')?.length ?? 0) > 0, 60_000, 50);
  await workers.stop();
  workers = undefined;
  expect((await handle.describe()).status.name).toBe('RUNNING');
  workers = await startStackWorkers(stack);

  expect(await handle.result()).toEqual({ delivered: true, attempts: FLAKY_FAILURES + 1 });
  expect(arrivals.get('/flaky')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  expect(await triesOf(hookId)).toEqual([...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => [n, 500]), [10, 200]]);
  // the first activity kept its 8 attempts; the second was scheduled with today's policy (no attempt limit), after the
  // pause the 8th try asked for
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts ?? 0);
  expect(scheduled).toEqual([8, 0]);
  expect(events.filter((e) => e.timerStartedEventAttributes)).toHaveLength(1);
  await recordHistory(stack, workflowId, 'webhook-old-retry-policy-continued');
});
