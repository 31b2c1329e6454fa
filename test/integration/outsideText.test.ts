/**
 * Text from outside processes that PostgreSQL cannot store as it is (lib/db/storableText.ts): a NUL, bytes that are
 * not UTF-8, an unpaired surrogate in a JSON escape. An agent printing one used to lose every line of its run (its
 * log batch's insert failed 22021, three times, then was dropped); a script task's output the same. Now each such
 * character is stored as U+FFFD, every other line and character as it was, in order.
 */
import { readLogs } from '../../lib/db/processes';
import { MAX_LINE_LENGTH } from '../../lib/process/lines';
import { agentConfig, api } from '../support/attemptHelpers';
import { startTestStack, type TestStack } from '../support/harness';
import { runWorkflowToEnd, schedulerInject } from '../support/schedulerStack';

// printf's \000 is a NUL byte and \377 a byte that is never UTF-8; the JSON line escapes a NUL and a lone surrogate
const TEXT_AGENT = 'printf "before\\n"; printf "a\\000b\\n"; printf "c\\377d\\n"; printf "{\\"s\\":\\"\\\\\\\\u0000 \\\\\\\\ud800\\"}\\n"; echo after';
// a Claude stream-json line whose text holds a NUL and a lone surrogate (escaped, as JSON carries them)
const JSON_LINE = JSON.stringify({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: 'x' }] } }).replace('"x"', '"n\\u0000l \\udc00 ok"');
const JSON_AGENT = `printf '%s\\n' '${JSON_LINE}'; echo plain`;

let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task', 'scheduler'],
    worker: true,
    file: agentConfig({
      agents: {
        binary: { command: ['sh', '-c', TEXT_AGENT], format: 'text' },
        streamJson: { command: ['sh', '-c', JSON_AGENT], format: 'claude-stream-json' },
        // 3.5 Mi characters without a newline (a minified bundle, a binary file): bounded lines, not one unbounded string
        oneLine: { command: ['sh', '-c', `head -c ${3.5 * MAX_LINE_LENGTH} /dev/zero | tr '\\000' a; echo; echo after`], format: 'text' },
      },
      scheduler: { healthCheckIntervalSeconds: 0 },
    }),
  });
  h = api(stack);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

async function runAgent(llm: string) {
  const p = await h.project();
  const started = await h.start(await h.task(p.id, `outside text ${llm}`), llm);
  const attempt = await h.until(started.attemptId, ['completed', 'failed'], 60_000);
  return { attempt, logs: await readLogs(stack.db, { processIds: [started.processId] }), processId: started.processId };
}

test('an agent printing NUL, non-UTF-8 bytes and an escaped lone surrogate keeps every line, in order, those characters as U+FFFD', async () => {
  const { attempt, logs, processId } = await runAgent('binary');
  expect(attempt.status).toBe('completed');
  expect(logs.map((l) => l.message)).toEqual(['before', 'a\ufffdb', 'c\ufffdd', '{"s":"\\u0000 \\ud800"}', 'after', 'agent exited with code 0']);
  expect(logs.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  // and the API serves them (the JSON line's escapes are text, shown as printed)
  const served = await h.inject('GET', `/api/processes/${processId}/logs`);
  expect(served.statusCode).toBe(200);
  expect(served.body.split('\n').filter(Boolean).map((l) => JSON.parse(l).message)).toContain('a\ufffdb');
});

test('a stream-json agent whose JSON carries an escaped NUL and lone surrogate: the line and its metadata are stored', async () => {
  const { attempt, logs } = await runAgent('streamJson');
  expect(attempt.status).toBe('completed');
  const messages = logs.map((l) => l.message);
  expect(messages.some((m) => m.includes('n\ufffdl \ufffd ok'))).toBe(true);
  expect(messages).toContain('plain');
  // nothing the agent printed was lost: its lines, then the exit line, numbered without a gap
  expect(logs.map((l) => l.seq)).toEqual(logs.map((_l, i) => i + 1));
  const stored = await stack.db.query<{ s: string }>('SELECT metadata::text AS s FROM process_logs WHERE attempt_id = $1', [attempt.id]);
  expect(stored.rows.some((r) => r.s.includes('\\u0000') || /\\ud[89a-f]/i.test(r.s))).toBe(false);
});

test('an agent printing 3.5 Mi characters without a newline: its output is stored as lines of at most 1 Mi, nothing lost', async () => {
  const { attempt, processId } = await runAgent('oneLine');
  expect(attempt.status).toBe('completed');
  const { rows } = await stack.db.query<{ len: number; head: string }>('SELECT length(message) AS len, left(message, 8) AS head FROM process_logs WHERE process_id = $1 ORDER BY seq', [processId]);
  expect(rows.map((r) => r.len)).toEqual([MAX_LINE_LENGTH, MAX_LINE_LENGTH, MAX_LINE_LENGTH, MAX_LINE_LENGTH / 2, 'after'.length, 'agent exited with code 0'.length]);
  expect(rows.slice(0, 4).every((r) => r.head === 'aaaaaaaa')).toBe(true);
});

test('a scheduler script task printing NUL and non-UTF-8 bytes completes with its output and logs stored', async () => {
  const inject = schedulerInject(stack);
  const created = await inject('POST', '/api/v1/workflows', { name: 'outside-text', tasks: [{ name: 'bin', type: 'script', script: 'printf "x\\000y\\n"; printf "p\\377q\\n"; echo end' }] });
  expect(created.statusCode).toBe(201);
  const { id, execution } = await runWorkflowToEnd(stack, 'outside-text');
  expect(execution.status).toBe('completed');
  expect(execution.tasks[0].output.trim()).toBe('x\ufffdy\np\ufffdq\nend');
  const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs as { message: string }[];
  expect(logs.map((l) => l.message).join('\n')).toContain('x\ufffdy');
});

test('the pool makes any parameter storable: text, text[] and json alike; well-formed text is untouched', async () => {
  const { rows } = await stack.db.query<{ t: string; a: string[]; j: unknown; ok: string }>('SELECT $1::text AS t, $2::text[] AS a, $3::jsonb AS j, $4::text AS ok', [
    'a\u0000b\ud800',
    ['\u0000', 'fine'],
    { 'k\u0000': ['v\udfff'], pair: '\ud83d\ude00' },
    'é 😀 \\u0000 as text',
  ]);
  expect(rows[0]).toEqual({ t: 'a\ufffdb\ufffd', a: ['\ufffd', 'fine'], j: { 'k\ufffd': ['v\ufffd'], pair: '😀' }, ok: 'é 😀 \\u0000 as text' });
});
