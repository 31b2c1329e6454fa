/**
 * kill -9 of the worker while a webhook delivery waits for its receiver: the delivery is tried again on another
 * worker once the try's heartbeats stop (seconds), not after the try's start-to-close timeout (two minutes).
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { publishEvent } from '../../lib/events/publish';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { spawnStackWorker } from '../support/workerProcess';

jest.setTimeout(240_000);

let stack: TestStack;
let receiver: http.Server;
const workers: ChildProcess[] = [];
/** when each request reached the receiver, and the first one's answer (never sent) */
const arrivals: number[] = [];
const held: http.ServerResponse[] = [];

async function startWorkerProcess(): Promise<ChildProcess> {
  const child = await spawnStackWorker(stack);
  workers.push(child);
  return child;
}

beforeAll(async () => {
  // the receiver holds the first delivery unanswered (the worker dies while it waits) and accepts the next
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(Date.now());
      if (arrivals.length === 1) held.push(res);
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  // deliveries may wait up to 60 s for an answer, so only the heartbeat can notice the dead worker sooner
  stack = await startTestStack({ services: ['task'], worker: false, file: { webhooks: { timeoutMs: 60_000 } } });
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  for (const r of held) r.destroy();
  await stack?.close();
  await new Promise((r) => receiver.close(r));
});

test('kill -9 of the worker mid-delivery: the next try runs on a new worker within seconds and is logged', async () => {
  const first = await startWorkerProcess();
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const created = await stack.app('task').inject({ method: 'POST', url: '/api/webhooks', payload: { url, events: ['approval.cancelled'], secret: 'whsec-kill-0123' } });
  expect(created.statusCode).toBe(201);
  const hookId = created.json().data.id as string;
  const ev = await publishEvent(stack.db, { type: 'approval.cancelled', topics: [], data: { approvalId: hookId } });

  await eventually(async () => arrivals.length > 0, 60_000);
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const killedAt = Date.now();
  await startWorkerProcess();

  const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${ev.seq}`);
  expect(await handle.result()).toEqual({ delivered: true, attempts: 2 });
  expect(arrivals).toHaveLength(2);
  // the start-to-close timeout (2 min) would have retried it only after ~120 s; the heartbeat timeout is 10 s
  expect((arrivals[1] as number) - killedAt).toBeLessThan(90_000);
  // the dead worker's try left no row (it never got an answer); the second one is in the delivery log
  const log = (await stack.app('task').inject({ method: 'GET', url: `/api/webhooks/${hookId}/deliveries?limit=100` })).json().data;
  expect(log.map((d: { eventSeq: number; attempt: number; success: boolean; statusCode: number }) => [d.eventSeq, d.attempt, d.success, d.statusCode])).toEqual([[ev.seq, 2, true, 200]]);
});
