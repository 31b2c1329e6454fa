/**
 * A webhook delivery whose worker comes up while PostgreSQL is away (killed with kill -9, started again 10 s later):
 * the event is delivered on the first try, once. The `deliver` activity waits for PostgreSQL inside itself before its
 * request leaves (activities/untilPostgresAnswers.ts); before, each try failed at once reading the webhook, and the
 * outage used up the delivery's tries (1, 2, 4, 8 s apart: the event arrived on try 5; an outage of about two minutes
 * used up all 8 and the delivery gave up). The task service (whose dispatcher starts the delivery) and the worker run
 * in this process against a PostgreSQL of this file's own (test/support/ownPostgres.ts).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { publishEvent } from '../../lib/events/publish';
import type { RunningWorkers } from '../../workers/createWorker';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(300_000);

let home: string;
let pg: OwnPostgres;
let stack: TestStack;
let workers: RunningWorkers | undefined;
let receiver: http.Server;
/** X-Armada-Attempt of each request the receiver got */
const arrivals: string[] = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(String(req.headers['x-armada-attempt']));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-webhook-pg-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  stack = await startTestStack({ services: ['task'], worker: false, databaseUrl: pg.url });
}, 240_000);

afterAll(async () => {
  await workers?.stop();
  await stack?.close();
  await pg?.close();
  await new Promise((r) => receiver.close(r));
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

test('a delivery whose worker starts while PostgreSQL is away (back after 10 s) is sent once, on its first try', async () => {
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const created = await stack.app('task').inject({ method: 'POST', url: '/api/webhooks', payload: { url, events: ['approval.cancelled'], secret: 'whsec-outage-0123' } });
  expect(created.statusCode).toBe(201);
  const hookId = created.json().data.id as string;
  const ev = await publishEvent(stack.db, { type: 'approval.cancelled', topics: [], data: { approvalId: hookId } });
  // the dispatcher has started the delivery; no worker has taken it yet
  const handle = (await stack.temporal.client()).workflow.getHandle(`webhook:${hookId}:${ev.seq}`);
  await eventually(async () => (await handle.describe()).status.name === 'RUNNING', 60_000, 100);

  await pg.kill();
  workers = await startStackWorkers(stack);
  await new Promise((r) => setTimeout(r, 10_000));
  expect(arrivals).toEqual([]); // nothing can be sent without the webhook's row
  await pg.start();

  expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
  expect(arrivals).toEqual(['1']);
  const log = (await stack.app('task').inject({ method: 'GET', url: `/api/webhooks/${hookId}/deliveries?limit=100` })).json().data;
  expect(log.map((d: { eventSeq: number; attempt: number; success: boolean }) => [d.eventSeq, d.attempt, d.success])).toEqual([[ev.seq, 1, true]]);
});
