/**
 * Big prompts reach a named agent: a task at its length limit in a 3-byte script, or a memory agent's prompt with
 * long memory entries, is more than Linux takes in one environment string (128 KiB, MAX_ARG_STRLEN). The prompt is
 * then on stdin only; before, ARMADA_PROMPT carried it too and every such task failed with `spawn E2BIG`.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { TEST_API_KEY, eventually, startTestStack, type TestStack } from '../support/harness';

const AGENT_SCRIPT = path.join(__dirname, '..', 'fixtures', 'agents', 'prompt-size-agent.js');
const suffix = crypto.randomBytes(3).toString('hex');
// Workflow ids (agent:<name>) are global to the Temporal namespace: names of our own.
const PLAIN = `plain-${suffix}`;
const RECALLER = `recaller-${suffix}`;

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['agents'],
    worker: true,
    file: {
      agents: { sizer: { command: [process.execPath, AGENT_SCRIPT] } },
      multiAgent: {
        agents: [
          { name: PLAIN, llm: 'sizer' },
          { name: RECALLER, llm: 'sizer', memory: true },
        ],
      },
    },
  });
});
afterAll(async () => {
  const client = await stack.temporal.client();
  await Promise.allSettled([PLAIN, RECALLER].map((n) => client.workflow.getHandle(`agent:${n}`).terminate('test over')));
  await stack.close();
});

const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });

async function runTask(agent: string, task: string) {
  const res = await call('POST', '/api/v1/tasks', { agent, task });
  expect(res.statusCode).toBe(201);
  const id: string = res.json().taskId;
  return eventually(async () => {
    const t = (await call('GET', `/api/v1/tasks/${id}`)).json();
    return t.status === 'completed' || t.status === 'failed' ? t : undefined;
  }, 30_000);
}

describe('big prompts', () => {
  test('a small prompt is on stdin and in ARMADA_PROMPT', async () => {
    const t = await runTask(PLAIN, 'say hello');
    expect(t).toMatchObject({ status: 'completed', error: null, result: 'stdin: 9 bytes; ARMADA_PROMPT: same\nlast line: say hello' });
  });

  test('a task of 100 000 characters (the limit) in a 3-byte script runs, its prompt whole on stdin', async () => {
    const task = '日'.repeat(100_000);
    const t = await runTask(PLAIN, task);
    expect(t.error).toBeNull();
    expect(t).toMatchObject({ status: 'completed', result: `stdin: 300000 bytes; ARMADA_PROMPT: unset\nlast line: ${'日'.repeat(80)}` });
  });

  test('a memory agent whose memory hits make the prompt over 128 KiB runs, the hits and the task on stdin', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await call('POST', '/api/v1/memory', { content: `okapi note ${i}: ${'x'.repeat(50_000)}` });
      expect(res.statusCode).toBe(201);
    }
    const t = await runTask(RECALLER, 'what do we know about the okapi');
    expect(t.error).toBeNull();
    expect(t.status).toBe('completed');
    const [, bytes] = /^stdin: (\d+) bytes; ARMADA_PROMPT: unset\nlast line: what do we know about the okapi$/.exec(t.result) ?? [];
    expect(Number(bytes)).toBeGreaterThan(150_000);
  });

  test("the memory a task's result leaves names the task by its first 500 characters, an emoji cut in none", async () => {
    const task = `a${'😀'.repeat(600)}`;
    const t = await runTask(RECALLER, task);
    expect(t.status).toBe('completed');
    const { rows } = await stack.db.query<{ metadata: { task: string } }>("SELECT metadata FROM agent_memory WHERE metadata->>'taskId' = $1", [t.taskId]);
    // before: the first 500 UTF-16 units, whose last was half of an emoji, stored as U+FFFD
    expect(rows[0]?.metadata.task).toBe(`a${'😀'.repeat(499)}`);
  });
});
