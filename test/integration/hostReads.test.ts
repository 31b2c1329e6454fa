/**
 * An API replica that cannot see an attempt's worktree (another host) reads its diff and container status through the
 * worker of the attempt's host (hostReadWorkflow on the host queue): the same answers as a replica reading in place,
 * and a 503 HOST_UNAVAILABLE, not a hang, when that host has no worker.
 */
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { createMetrics } from '../../lib/metrics';
import { agentConfig, api, recordCompletedHistory } from '../support/attemptHelpers';
import { logger, startTestStack, testConfig, type TestStack } from '../support/harness';

let stack: TestStack;
let inPlace: FastifyInstance;

beforeAll(async () => {
  // the stack's API asks the host for every worktree read; a second replica reads in place
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ attempts: { worktreeReads: 'host', hostReadTimeoutMs: 3000, heartbeatTimeoutMs: 5000 } }) });
  inPlace = await buildService('task', { db: stack.db, config: testConfig(agentConfig()), keys: stack.keys, temporal: stack.temporal, logger, metrics: createMetrics() });
  await inPlace.ready();
});
afterAll(async () => {
  await inPlace.close();
  await stack.close();
});

test('diff (all formats, one file) and container status through the host equal the in-place reads; 503 when the host has no worker', async () => {
  const h = api(stack);
  const p = await h.project();
  const taskId = await h.task(p.id, 'Edit the readme', 'append a line to README.md and add src/added.txt');
  const { attemptId } = await h.start(taskId);
  await h.until(attemptId, ['completed']);
  const viaHost = async (url: string) => {
    const r = await h.inject('GET', url);
    expect(r.statusCode).toBe(200);
    return r.json().data;
  };
  const local = async (url: string) => {
    const r = await inPlace.inject({ method: 'GET', url });
    expect(r.statusCode).toBe(200);
    return r.json().data;
  };
  for (const q of ['', '?format=json', '?format=split', '?file=README.md']) {
    const remote = await viaHost(`/api/attempts/${attemptId}/diff${q}`);
    expect(remote).toEqual(await local(`/api/attempts/${attemptId}/diff${q}`));
  }
  const unified = await viaHost(`/api/attempts/${attemptId}/diff?format=unified`);
  expect(unified.summary.filesChanged).toBeGreaterThan(0);
  expect(unified.diff).toContain('diff --git');
  // free disk space moves between two reads while other tests write: compared apart
  const withoutFreeSpace = (c: { diskUsage: { available: number } }) => ({ ...c, diskUsage: { ...c.diskUsage, available: 0 } });
  const container = await viaHost(`/api/containers/${attemptId}`);
  expect(withoutFreeSpace(container)).toEqual(withoutFreeSpace(await local(`/api/containers/${attemptId}`)));
  expect(container.diskUsage.available).toBeGreaterThan(0);
  expect(container.status).toBe('inactive');
  expect(container.diskUsage.used).toBeGreaterThan(0);
  await recordCompletedHistory(stack, 'hostReadWorkflow', 'host-read-completed'); // a read's workflow id is random

  // the live diff stream reads through the host too (a fingerprint, then the diff): the same files as in place
  const base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
  const sse = await (await fetch(`${base}/api/events/task-attempts/${attemptId}/diff`)).text();
  const diffEvent = sse.split('\n\n').find((b) => b.includes('event: diff'));
  const data = JSON.parse(diffEvent?.split('\n').find((l) => l.startsWith('data: '))?.slice(6) ?? 'null');
  expect(data.files).toEqual((await local(`/api/attempts/${attemptId}/diff?format=json`)).files);
  expect(sse).toContain('event: end');
  expect((await h.inject('GET', '/metrics')).body).toMatch(/armada_live_diff_reads_total\{kind="fingerprint"\} [1-9]/);

  await stack.workers?.stop();
  const t0 = Date.now();
  const down = await h.inject('GET', `/api/attempts/${attemptId}/diff`);
  expect(down.statusCode).toBe(503);
  expect(down.json()).toMatchObject({ success: false, error: { code: 'HOST_UNAVAILABLE' } });
  expect(down.body).not.toMatch(/\n\s+at /); // no stack trace
  expect(Date.now() - t0).toBeLessThan(10_000);
  // the replica that sees the worktree still answers
  expect((await local(`/api/attempts/${attemptId}/diff?format=unified`)).diff).toBe(unified.diff);
  // the live diff stream says the host is unavailable (and keeps trying) instead of failing
  const ac = new AbortController();
  const res = await fetch(`${base}/api/events/task-attempts/${attemptId}/diff`, { signal: ac.signal });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  while (!text.includes('event: unavailable')) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
  }
  ac.abort();
  expect(text).toMatch(/event: unavailable\ndata: \{"attemptId":"[^"]+","message":"The worker of the attempt's host/);
}, 90_000);
