/**
 * A process's log followed over the WebSocket (`/ws/execution-processes/:id/logs/normalized`) while the API loses
 * PostgreSQL (the chaos soak's `postgres-kill`; here the API's pool reaches PostgreSQL through a TCP proxy that breaks
 * the open connections and refuses new ones): the socket closes with 1011, not 1000, since the process has not ended,
 * and a client that resumes with `?after=<its last seq>` once PostgreSQL is back gets every later line once, then the
 * 1000 of the process's end.
 *
 * Before: the failed read closed the socket with 1000 `process finished`, which is what a client (the board's live
 * log, `endOnNormalClose`) takes for the end of the process, so it stopped following a process that was still running.
 */
import WebSocket from 'ws';
import { recordProcessEnded } from '../../lib/attempts/projections';
import { insertAttempt } from '../../lib/db/attempts';
import { withTransaction } from '../../lib/db/pool';
import { appendLogs, insertProcess, type LogEntry } from '../../lib/db/processes';
import { api } from '../support/attemptHelpers';
import { createTestDatabase, eventually, startTestStack, type TestStack } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let proxy: TcpProxy;
let stack: TestStack;
let h: ReturnType<typeof api>;
let base: string;
const opened: WebSocket[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  const url = new URL(database.url);
  proxy = await startTcpProxy(`${url.hostname}:${url.port}`);
  [url.hostname, url.port] = proxy.address.split(':') as [string, string];
  stack = await startTestStack({ services: ['task'], databaseUrl: url.toString() });
  h = api(stack);
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  for (const ws of opened) ws.terminate();
  proxy?.setMode('forward');
  await stack?.close();
  await proxy?.close();
  await database?.drop();
});

const lines = (from: number, to: number): LogEntry[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ level: 'info', message: `line ${from + i}`, timestamp: new Date().toISOString(), source: 'stdout' }));

function follow(path: string): { seqs: number[]; closed: Promise<number> } {
  const ws = new WebSocket(`${base.replace('http', 'ws')}${path}`);
  opened.push(ws);
  const seqs: number[] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as { seq?: number };
    if (typeof m.seq === 'number') seqs.push(m.seq);
  });
  ws.on('error', () => undefined);
  return { seqs, closed: new Promise((r) => ws.on('close', (code) => r(code))) };
}

test('the log socket of a running process closes with 1011 when PostgreSQL goes away, and a resume with after= gets the rest, then 1000', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'followed through an outage');
  const [attemptId, processId] = ['att-outage', 'proc-outage'];
  // written on the test's own pool, which does not go through the proxy
  await insertAttempt(database.pool, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  await insertProcess(database.pool, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  await appendLogs(database.pool, processId, attemptId, lines(1, 3));

  const first = follow(`/ws/execution-processes/${processId}/logs/normalized?after=0`);
  await eventually(async () => first.seqs.length === 3, 10_000);
  proxy.setMode('refuse'); // the API's connections break and new ones are refused: its LISTEN too, so the stream reads again
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([first.closed, new Promise<string>((r) => (timer = setTimeout(() => r('still open after 20 s'), 20_000)))]);
  clearTimeout(timer); // else it holds the jest worker up to 20 s after the file (a forced exit when it is the last)
  expect(code).toBe(1011);
  expect(first.seqs).toEqual([1, 2, 3]);

  proxy.setMode('forward');
  await appendLogs(database.pool, processId, attemptId, lines(4, 6));
  // resumed as a client does (the board, the soak's follower): from the last seq it holds, once the API reads again
  const rest = await eventually(
    async () => {
      const s = follow(`/ws/execution-processes/${processId}/logs/normalized?after=3`);
      const got = await Promise.race([eventually(async () => s.seqs.length === 3, 5000).then(() => s), s.closed.then(() => undefined)]).catch(() => undefined);
      return got;
    },
    30_000,
    500,
  );
  expect(rest.seqs).toEqual([4, 5, 6]);
  await withTransaction(database.pool, (c) => recordProcessEnded(c, processId, 'completed', 0, null));
  expect(await rest.closed).toBe(1000);
  expect(rest.seqs).toEqual([4, 5, 6]);
});
