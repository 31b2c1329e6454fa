/**
 * A follow-up prompt at its length limit (100 000 characters) reaches the attempt's agent. In UTF-8 that is up to
 * ~300 KB, more than Linux takes in one environment string (128 KiB, MAX_ARG_STRLEN): the prompt is then on stdin
 * only. Before, ARMADA_PROMPT carried it too and such a follow-up failed at once with `spawn E2BIG`.
 */
import path from 'node:path';
import { api } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';

const AGENT_SCRIPT = path.join(__dirname, '..', 'fixtures', 'agents', 'prompt-size-agent.js');

let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: { agents: { sizer: { command: [process.execPath, AGENT_SCRIPT], format: 'text' } } } });
  h = api(stack);
}, 120_000);
afterAll(async () => stack?.close());

async function logsOf(attemptId: string): Promise<string[]> {
  const processes = (await h.inject('GET', `/api/processes?attemptId=${attemptId}&limit=100`)).json().data as { id: string; kind?: string }[];
  const out: string[] = [];
  for (const p of processes) {
    const body = (await h.inject('GET', `/api/processes/${p.id}/logs`)).body;
    out.push(...body.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { message: string }).message));
  }
  return out;
}

test('a 100 000-character follow-up (about 300 KB of UTF-8) reaches the agent whole on stdin; small prompts come in ARMADA_PROMPT too', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'small first');
  const { attemptId } = await h.start(taskId, 'sizer');
  await h.until(attemptId, ['completed'], 60_000);
  expect((await logsOf(attemptId)).some((l) => /ARMADA_PROMPT: same/.test(l))).toBe(true);

  const prompt = `${'漢'.repeat(99_990)}\nthe end`;
  const bytes = Buffer.byteLength(prompt);
  expect(bytes).toBeGreaterThan(128 * 1024);
  const r = await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt });
  expect(r.statusCode).toBeLessThan(300);
  // read once the follow-up's agent has exited (its second "agent exited" line): its lines may be stored in more
  // than one insert, so the first one seen is not all of them (ci53b read "stdin: …" without "last line: …")
  const lines = await eventually(async () => {
    const all = await logsOf(attemptId);
    return all.some((l) => l.startsWith(`stdin: ${bytes} bytes`)) && all.filter((l) => l.startsWith('agent exited')).length >= 2 ? all : undefined;
  }, 60_000);
  expect(lines).toContain(`stdin: ${bytes} bytes; ARMADA_PROMPT: unset`);
  expect(lines).toContain('last line: the end');
  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(a.status).toBe('completed');
}, 180_000);
