/**
 * A log read without `follow` (`GET /api/processes/:id/logs`, `/api/attempts/:id/logs`, `/api/tasks/:id/logs`) answers
 * every stored line, however many, in order. Before, such a read stopped at the first 10,000 lines of each process
 * without a word (the read was one page); a follow read, and the board's log (which now reads what is stored this
 * way), need the whole log.
 */
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';

const LINES = 25_000;
let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: agentConfig({ agents: { counter: { command: ['sh', '-c', `seq 1 ${LINES}`], format: 'text' } } }),
  });
  h = api(stack);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const lines = (body: string) => body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { seq: number; message: string; processId: string });
const counted = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

test('every line of a 25,000-line process, of an attempt of two such processes and of its task, in order; after resumes', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'a long log');
  const started = await h.start(taskId, 'counter');
  expect((await h.until(started.attemptId, ['completed'], 120_000)).status).toBe('completed');
  // a follow-up: a second process of the attempt, printing as much again
  expect((await h.inject('POST', `/api/attempts/${started.attemptId}/follow-up`, { prompt: 'again' })).statusCode).toBe(202);
  const processes = await eventually(async () => {
    const r = (await h.inject('GET', `/api/processes?attemptId=${started.attemptId}`)).json().data as { id: string; status: string }[];
    if (r.length !== 2 || r.some((x) => x.status === 'running')) throw new Error('follow-up still running');
    return r;
  }, 120_000);
  const second = processes.find((x) => x.id !== started.processId) as { id: string };

  const one = lines((await h.inject('GET', `/api/processes/${started.processId}/logs`)).body);
  expect(one).toHaveLength(LINES + 1); // and the agent's exit line
  expect(one.map((l) => l.seq)).toEqual(Array.from({ length: LINES + 1 }, (_, i) => i + 1));
  expect(one.slice(0, LINES).map((l) => l.message)).toEqual(counted(1, LINES));

  const resumed = lines((await h.inject('GET', `/api/processes/${started.processId}/logs?after=20000`)).body);
  expect(resumed.map((l) => l.seq)).toEqual(Array.from({ length: LINES + 1 - 20_000 }, (_, i) => 20_001 + i));
  // a resume reads every line after its seq, also with tail (which picks the lines of a first read only)
  const resumedTail = lines((await h.inject('GET', `/api/processes/${started.processId}/logs?after=2000&tail=5`)).body);
  expect([resumedTail.length, resumedTail[0]?.seq]).toEqual([LINES + 1 - 2000, 2001]);
  const tail = lines((await h.inject('GET', `/api/processes/${started.processId}/logs?tail=15000`)).body);
  expect([tail.length, tail[0]?.seq, tail.at(-1)?.seq]).toEqual([15_000, LINES + 1 - 15_000 + 1, LINES + 1]);

  for (const url of [`/api/attempts/${started.attemptId}/logs`, `/api/tasks/${taskId}/logs`]) {
    const all = lines((await h.inject('GET', url)).body);
    expect([url, all.length]).toEqual([url, 2 * (LINES + 1)]);
    // the first process's lines, then the follow-up's, each in its order
    expect(all.map((l) => l.processId)).toEqual([...Array(LINES + 1).fill(started.processId), ...Array(LINES + 1).fill(second.id)]);
    expect(all.slice(LINES + 1, 2 * LINES + 1).map((l) => l.message)).toEqual(counted(1, LINES));
  }
  // a level filter still applies to every page
  const errors = lines((await h.inject('GET', `/api/attempts/${started.attemptId}/logs?level=error`)).body);
  expect(errors.every((l) => (l as unknown as { level: string }).level === 'error')).toBe(true);
}, 300_000);
