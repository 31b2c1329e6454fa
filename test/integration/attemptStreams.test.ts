/** Streams over a listening server: /ws task status, /ws/execution-processes, log sockets, SSE with Last-Event-ID; follow-ups; metrics. */
import http from 'node:http';
import WebSocket from 'ws';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api, recordHistory } from '../support/attemptHelpers';
import { MAX_TASK_SUBSCRIPTIONS } from '../../api/task/taskChannelMessages';

let stack: TestStack;
let h: ReturnType<typeof api>;
let base: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig() });
  h = api(stack);
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await stack.close();
});

function socket(path: string): Promise<{ ws: WebSocket; messages: unknown[]; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}${path}`);
    const messages: unknown[] = [];
    const closed = new Promise<void>((r) => ws.on('close', () => r()));
    ws.on('message', (d) => {
      const s = String(d);
      try {
        messages.push(JSON.parse(s));
      } catch {
        messages.push(s);
      }
    });
    ws.on('open', () => resolve({ ws, messages, closed }));
    ws.on('error', reject);
  });
}

/** Reads an SSE stream to its end; returns parsed events. */
function readSse(path: string, headers: Record<string, string> = {}): Promise<{ id?: string; event: string; data: unknown }[]> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${path}`, { headers }, (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (buf += d));
        res.on('end', () => {
          const events = buf
            .split('\n\n')
            .filter((b) => b.includes('event:'))
            .map((b) => {
              const f = Object.fromEntries(b.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
              return { id: f.id, event: f.event as string, data: JSON.parse(f.data as string) };
            });
          resolve(events);
        });
      })
      .on('error', reject);
  });
}

describe('attempt streams', () => {
  test('/ws: any JSON a client sends (null, numbers, arrays, wrong fields) gets an error message; the server stays up', async () => {
    const c = await socket('/ws');
    const bad = ['null', '5', '"x"', '[]', 'true', 'not json', '{}', '{"type":"subscribe"}', '{"type":"subscribe","channel":"tasks","taskId":{"a":1}}', `{"type":"subscribe","channel":"tasks","taskId":"${'t'.repeat(201)}"}`];
    for (const m of bad) c.ws.send(m);
    c.ws.send(JSON.stringify({ type: 'ping' }));
    await eventually(async () => c.messages.some((m) => (m as { type: string }).type === 'pong'));
    // before this change, `null` threw in the socket's message handler and stopped the whole process
    const errors = c.messages.filter((m) => (m as { type: string }).type === 'error').map((m) => (m as { message: string }).message);
    expect(errors).toHaveLength(bad.length);
    expect(errors[0]).toBe('expected {type: subscribe|unsubscribe, channel: tasks, taskId?} or {type: ping}; got null');
    expect(errors[5]).toBe('messages must be JSON');
    expect(errors.at(-1)).toMatch(/^taskId must be a task id/);
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    // subscriptions per connection are bounded
    for (let i = 0; i < MAX_TASK_SUBSCRIPTIONS + 1; i++) c.ws.send(JSON.stringify({ type: 'subscribe', channel: 'tasks', taskId: `t-${i}` }));
    await eventually(async () => c.messages.filter((m) => ['subscribed', 'error'].includes((m as { type: string }).type)).length === bad.length + MAX_TASK_SUBSCRIPTIONS + 1);
    expect(c.messages.filter((m) => (m as { type: string }).type === 'subscribed')).toHaveLength(MAX_TASK_SUBSCRIPTIONS);
    expect(c.messages.at(-1)).toEqual({ type: 'error', message: `at most ${MAX_TASK_SUBSCRIPTIONS} subscriptions per connection; unsubscribe from one, or subscribe without taskId for every task` });
    c.ws.close();
    // a task id `*` is a task id: subscribing to it does not stand in for the subscription to every task
    const d = await socket('/ws');
    d.ws.send(JSON.stringify({ type: 'subscribe', channel: 'tasks', taskId: '*' }));
    d.ws.send(JSON.stringify({ type: 'subscribe', channel: 'tasks' }));
    await eventually(async () => d.messages.filter((m) => (m as { type: string }).type === 'subscribed').length === 2);
    const p = await h.project();
    const taskId = await h.task(p.id, 'Watched by every-task subscribers');
    expect((await h.inject('PATCH', `/api/tasks/${taskId}`, { status: 'in_progress' })).statusCode).toBe(200);
    await eventually(async () => d.messages.some((m) => (m as { type: string; taskId: string }).type === 'task.status_changed' && (m as { taskId: string }).taskId === taskId));
    d.ws.close();
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
  });

  test('/ws task.status_changed, /ws/execution-processes lifecycle, log sockets, SSE logs and diff with resume', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Streamed edit');
    const tasks = await socket('/ws');
    tasks.ws.send(JSON.stringify({ type: 'subscribe', channel: 'tasks', taskId }));
    await eventually(async () => tasks.messages.some((m) => (m as { type: string }).type === 'subscribed'));
    const procs = await socket('/ws/execution-processes');

    const { attemptId, processId } = await h.start(taskId);
    await h.until(attemptId, ['completed']);
    await eventually(async () => tasks.messages.filter((m) => (m as { type: string }).type === 'task.status_changed').length >= 2);
    const statuses = tasks.messages.filter((m) => (m as { type: string }).type === 'task.status_changed');
    expect(statuses).toEqual([
      expect.objectContaining({ type: 'task.status_changed', taskId, status: 'in_progress', timestamp: expect.any(String) }),
      expect.objectContaining({ type: 'task.status_changed', taskId, status: 'review' }),
    ]);
    await eventually(async () => procs.messages.some((m) => (m as { type: string; processId: string }).type === 'process_completed'));
    const mine = procs.messages.filter((m) => (m as { processId: string }).processId === processId).map((m) => (m as { type: string }).type);
    expect(mine[0]).toBe('process_started');
    expect(mine.at(-1)).toBe('process_completed');

    const raw = await socket(`/ws/execution-processes/${processId}/logs/raw`);
    await raw.closed;
    expect(raw.messages).toContain('edited README.md\n');
    const norm = await socket(`/ws/execution-processes/${processId}/logs/normalized`);
    await norm.closed;
    expect(norm.messages).toContainEqual(expect.objectContaining({ level: 'info', message: 'done', source: 'stdout', metadata: {} }));
    // a reconnecting client resumes with after=<last seq it got>: only the later entries come
    const seqs = (norm.messages as { seq: number }[]).map((m) => m.seq);
    expect(seqs.length).toBeGreaterThan(3);
    const resumedNorm = await socket(`/ws/execution-processes/${processId}/logs/normalized?after=${seqs[2]}`);
    await resumedNorm.closed;
    expect((resumedNorm.messages as { seq: number }[]).map((m) => m.seq)).toEqual(seqs.slice(3));

    const all = await readSse(`/api/events/processes/${processId}/logs`);
    const logs = all.filter((e) => e.event === 'log');
    expect(logs.map((e) => Number(e.id))).toEqual(logs.map((_, i) => i + 1));
    expect(all.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed' } });
    const resumed = await readSse(`/api/events/processes/${processId}/logs`, { 'last-event-id': '3' });
    expect(resumed.filter((e) => e.event === 'log').map((e) => Number(e.id))).toEqual(logs.slice(3).map((e) => Number(e.id)));

    // resume points at and past the largest seq a process log can have: nothing more, never a 500; a cursor past the
    // last line is a reset to it (test/integration/logStreamReset.test.ts)
    const beyond = await readSse(`/api/events/processes/${processId}/logs`, { 'last-event-id': '2147483647' });
    expect(beyond.map((e) => [e.event, e.id])).toEqual([['stream.ready', String(logs.length)], ['end', undefined]]);
    const atMax = await h.inject('GET', `/api/processes/${processId}/logs?after=2147483647&follow=true&tail=1`);
    expect(atMax.statusCode).toBe(200);
    expect(atMax.body).toBe('');
    const overMax = await h.inject('GET', `/api/processes/${processId}/logs?after=2147483648`);
    expect(overMax.statusCode).toBe(400);

    const diff = await readSse(`/api/events/task-attempts/${attemptId}/diff`);
    expect(diff[0]).toMatchObject({ event: 'diff', data: { attemptId, summary: { filesChanged: 2, additions: 4, deletions: 0 } } });
    const again = await readSse(`/api/events/task-attempts/${attemptId}/diff`, { 'last-event-id': diff[0]?.id as string });
    expect(again.map((e) => e.event)).toEqual(['end']);
    tasks.ws.close();
    procs.ws.close();
  });

  test('follow logs stream until the attempt ends; follow-ups run as new processes FIFO', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLOWEDIT with follow-ups');
    const { attemptId, processId } = await h.start(taskId);
    const followed = await new Promise<string>((resolve, reject) => {
      http.get(`${base}/api/attempts/${attemptId}/logs?follow=true`, (res) => {
        let buf = '';
        res.on('data', (d) => (buf += d));
        res.on('end', () => resolve(buf));
      }).on('error', reject);
    });
    const lines = followed.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(lines.map((l) => l.message)).toEqual(expect.arrayContaining(['thinking slowly', 'created src/added.txt', 'agent exited with code 0']));
    expect((await h.attempt(attemptId)).status).toBe('completed');

    for (const prompt of ['FOLLOWUP one', 'FOLLOWUP two']) {
      const r = await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt });
      expect(r.statusCode).toBe(202);
    }
    const procs = await eventually(async () => {
      const list = (await h.inject('GET', `/api/processes?attemptId=${attemptId}`)).json().data as { id: string; kind: string; status: string }[];
      return list.length === 3 && list.every((x) => x.status === 'completed') ? list : undefined;
    }, 30_000);
    expect(procs.filter((x) => x.kind === 'follow_up')).toHaveLength(2);
    expect(procs.some((x) => x.id === processId)).toBe(true);
    const a = await h.until(attemptId, ['completed']);
    expect(a.changes.filesCreated).toBe(2); // src/added.txt and notes.txt
    const diff = (await h.inject('GET', `/api/attempts/${attemptId}/diff?format=json&file=notes.txt`)).json().data;
    expect(diff.files[0].changes.map((c: { content: string }) => c.content)).toEqual(['FOLLOWUP one', 'FOLLOWUP two']);
    const client = await stack.temporal.client();
    const progress = await client.workflow.getHandle(`attempt:${attemptId}`).query('progress');
    expect(progress).toMatchObject({ attemptId, stage: 'idle', pendingFollowUps: 0, lastOutcome: 'completed' });
    await recordHistory(stack, `attempt:${attemptId}`, 'attempt-two-follow-ups');

    const metrics = (await h.inject('GET', `/api/processes/${processId}/metrics`)).json().data;
    expect(metrics.processId).toBe(processId);
    expect(metrics.metrics.length).toBeGreaterThan(0);
    expect(metrics.metrics[0]).toEqual({ timestamp: expect.any(String), cpu: expect.any(Number), memory: expect.any(Number), diskIO: expect.any(Number), networkIO: 0 });
    expect(metrics.averages.memory).toBeGreaterThan(0);
    const text = await stack.metrics.registry.metrics();
    expect(text).toMatch(/armada_attempts_total\{llm="scripted",status="started"\} \d+/);
    expect(text).toMatch(/armada_attempts_total\{llm="scripted",status="completed"\} \d+/);
    expect(text).toMatch(/armada_attempt_duration_seconds_count\{llm="scripted",status="completed"\} \d+/);
    expect(text).toMatch(/armada_attempt_queue_wait_seconds_count\{llm="scripted"\} \d+/);
    expect(text).toMatch(/armada_agent_processes_running\{llm="scripted"\} 0/);
  });
});
