/**
 * A multi-agent task's `result` by profile format, through the API with a real worker: a claude-stream-json agent gives
 * its final answer (the `result` event, else the last assistant text, else the raw stdout), a text agent its stdout.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { eventually, startTestStack, type TestStack } from '../support/harness';

const AGENT_SCRIPT = path.join(__dirname, '..', 'fixtures', 'agents', 'stream-json-agent.js');
const suffix = crypto.randomBytes(3).toString('hex');
// Workflow ids (agent:<name>) are global to the Temporal namespace: names of our own.
const STREAMER = `streamer-${suffix}`;
const PLAIN = `plain-${suffix}`;

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: {
        'stream-json': { command: [process.execPath, AGENT_SCRIPT], format: 'claude-stream-json' },
        'stream-as-text': { command: [process.execPath, AGENT_SCRIPT] },
      },
      multiAgent: {
        agents: [
          { name: STREAMER, role: 'answerer', llm: 'stream-json', memory: true },
          { name: PLAIN, role: 'printer', llm: 'stream-as-text' },
        ],
      },
    },
  });
});
afterAll(async () => {
  const client = await stack.temporal.client();
  await Promise.allSettled([STREAMER, PLAIN].map((n) => client.workflow.getHandle(`agent:${n}`).terminate('test over')));
  await stack.close();
});

const KEY = 'test-api-key-0123456789';
const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });

async function runTask(agent: string, task: string) {
  const res = await call('POST', '/api/v1/tasks', { agent, task });
  expect(res.statusCode).toBe(201);
  const id: string = res.json().taskId;
  return eventually(async () => {
    const t = (await call('GET', `/api/v1/tasks/${id}`)).json();
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, 30_000);
}

describe('multi-agent task result by format', () => {
  test('claude-stream-json: the result event\'s answer, not the JSON lines; memory stores that text', async () => {
    const t = await runTask(STREAMER, 'summarise the repository layout');
    expect(t).toMatchObject({ status: 'completed', error: null, result: 'Final answer for: summarise the repository layout\nAll checks passed.' });
    const found = (await call('GET', `/api/v1/memory/search?q=${encodeURIComponent('repository layout')}&agent=${STREAMER}`)).json();
    const entry = found.results.find((r: { metadata: { taskId?: string } }) => r.metadata.taskId === t.taskId);
    expect(entry).toMatchObject({ agent: STREAMER, content: t.result, metadata: { source: 'agent-task' } });
  });

  test('claude-stream-json without a result event: the last assistant text', async () => {
    const t = await runTask(STREAMER, 'NORESULT wrap up');
    expect(t).toMatchObject({ status: 'completed', result: 'Last words for: NORESULT wrap up' });
  });

  test('claude-stream-json output with no final message (no JSON at all): the raw stdout', async () => {
    const t = await runTask(STREAMER, 'NOJSON just talk');
    expect(t).toMatchObject({ status: 'completed', result: 'no json here\njust text for: NOJSON just talk' });
  });

  test('a failed claude-stream-json run keeps its final text as the result', async () => {
    const t = await runTask(STREAMER, 'FAIL this one');
    expect(t).toMatchObject({ status: 'failed', error: 'exit code 4: the model gave up', result: 'Could not finish: FAIL this one' });
  });

  test('text format: the same output is kept as plain stdout (the JSON lines)', async () => {
    const task = 'print everything';
    const t = await runTask(PLAIN, task);
    const stdout = execFileSync(process.execPath, [AGENT_SCRIPT], { input: task, encoding: 'utf8' });
    expect(t.status).toBe('completed');
    expect(t.result).toBe(stdout.trimEnd());
    const events = (t.result as string).split('\n').map((l) => JSON.parse(l).type);
    expect(events).toEqual(['system', 'assistant', 'assistant', 'user', 'assistant', 'result']);
  });
});
