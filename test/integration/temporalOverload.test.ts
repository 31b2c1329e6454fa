/**
 * Temporal refuses calls for a limit of its own: a dev server whose namespace takes 2 requests a second
 * (`frontend.namespaceRPS`, as a cluster's operator sets it), its requests taken by another client, gets a burst of
 * approval creates, each a workflow start.
 * The SDK retries a RESOURCE_EXHAUSTED four times (~10 s); past that the refusal reached the client as a 500. Checked:
 * every answer is a 201 or a 503 in the task service's shape saying Temporal is overloaded, with Retry-After, never a
 * 500; a refused create leaves no approval behind (its transaction rolled back); and once the burst is over a create
 * goes through, with nothing restarted. temporalRefusal is checked on the error the server really sent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { agentConfig, api } from '../support/attemptHelpers';
import { startTestStack, type TestStack } from '../support/harness';
import { startOwnTemporal } from '../support/ownTemporal';
import { DEV_SERVER_DYNAMIC_CONFIG, type RunningDevServer } from '../../lib/runtime/temporalDevServer';
import { temporalRefusal } from '../../lib/temporal/client';

jest.setTimeout(180_000);

let home: string;
let dev: RunningDevServer;
let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-overload-'));
  dev = await startOwnTemporal(home, [...DEV_SERVER_DYNAMIC_CONFIG, 'frontend.namespaceRPS=2', 'frontend.namespaceBurstRatio=1']);
  process.env.ARMADA_TEST_TEMPORAL_ADDRESS = dev.address;
  // a bound past the SDK's four tries of a RESOURCE_EXHAUSTED (~10 s with jitter), so the refusal itself answers
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig(), env: { ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS: '30000' } });
  h = api(stack);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await dev?.stop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

test('a namespace over its rate limit: approval creates and a start answer 201/200 or a 503 "overloaded" with Retry-After, never a 500, and a refused one leaves nothing', async () => {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'approvals under a rate limit'));
  // another client of the namespace takes its requests as fast as they come back (no retries), so the API's calls,
  // retried a second and more apart, find the limit spent; 8 creates, within the API's pool of 10 connections (each
  // holds one across its start)
  const other = await Connection.connect({ address: dev.address, interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 1 }))] });
  let hammering = true;
  const hammer = Promise.all(
    Array.from({ length: 4 }, async (_, k) => {
      const client = new Client({ connection: other });
      for (let i = 0; hammering; i++) await client.workflow.start('nothing', { taskQueue: 'nowhere', workflowId: `other-${k}-${i}-${Date.now()}` }).catch(() => undefined);
    }),
  );
  let burst: Awaited<ReturnType<typeof h.inject>>[];
  // and a task start (its own mapping of a failed start: the attempt undone, a 503)
  const second = await h.task(p.id, 'started under the rate limit');
  let started: Awaited<ReturnType<typeof h.inject>>;
  try {
    [started, ...burst] = await Promise.all([
      h.inject('POST', `/api/tasks/${second}/start`, { llm: 'scripted' }),
      ...Array.from({ length: 8 }, (_, i) => h.inject('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'deploy', title: `burst ${i}` })),
    ]);
  } finally {
    hammering = false;
    await hammer;
    await other.close();
  }
  const statuses = burst.map((r) => r.statusCode);
  expect(statuses.filter((s) => s !== 201 && s !== 503)).toEqual([]);
  const refused = burst.filter((r) => r.statusCode === 503);
  for (const r of refused) {
    expect(r.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
    expect(r.headers['retry-after']).toBeDefined();
  }
  const overloaded = refused.filter((r) => /Temporal\) is overloaded.*try again/.test(r.json().error.message));
  expect(overloaded.length).toBeGreaterThan(0);
  for (const r of overloaded) expect(r.headers['retry-after']).toBe('2');
  expect([200, 503]).toContain(started.statusCode);
  if (started.statusCode !== 200) {
    expect({ status: started.statusCode, retryAfter: started.headers['retry-after'], body: started.json() }).toMatchObject({
      status: 503,
      retryAfter: '2',
      body: { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/Temporal\) is overloaded/) } },
    });
    expect((await h.inject('GET', `/api/tasks/${second}/attempts`)).json().data).toEqual([]); // the attempt undone
  }
  // only the created ones exist (a fresh database: every pending approval is of this burst)
  const list = (await h.inject('GET', '/api/approvals/pending?limit=100')).json();
  expect(list.pagination.total).toBe(burst.length - refused.length);

  // the burst over, a create goes through without a restart
  await new Promise((r) => setTimeout(r, 3000));
  const after = await h.inject('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'deploy', title: 'after the burst' });
  expect(after.statusCode).toBe(201);
});

test("temporalRefusal reads the server's own RESOURCE_EXHAUSTED as overloaded", async () => {
  const connection = await Connection.connect({ address: dev.address, interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 1 }))] });
  try {
    const client = new Client({ connection });
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => client.workflow.start('nothing', { taskQueue: 'nowhere', workflowId: `overload-${i}-${Date.now()}` })));
    const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(errors.length).toBeGreaterThan(0);
    for (const err of errors) expect(temporalRefusal(err)).toBe('overloaded');
    expect(temporalRefusal(new Error('not a gRPC error'))).toBeUndefined();
  } finally {
    await connection.close();
  }
});
