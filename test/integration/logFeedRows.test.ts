/**
 * The live log feed reads new rows with its own statement (lib/db/processes.ts readNewRows: a few columns as arrays,
 * the defaults of `raw` and `metadata` sent as NULL, `ts` as epoch milliseconds). What it builds must be exactly the
 * rows `readLogs` (the snapshot, tail and resume path) returns for the same lines, or a follower's lines would differ
 * depending on whether it was caught up (the feed) or behind (the database).
 */
import { insertAttempt } from '../../lib/db/attempts';
import { appendLogs, insertProcess, readLogs, readNewRows, type LogEntry } from '../../lib/db/processes';
import { api } from '../support/attemptHelpers';
import { startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

test('the feed rows equal the rows readLogs returns: raw, metadata, sub-millisecond and pre-1970 times, every level', async () => {
  const h = api(stack);
  const p = await h.project();
  const taskId = await h.task(p.id, 'feed rows');
  const attemptId = 'att-feed-rows';
  const processId = 'proc-feed-rows';
  await insertAttempt(stack.db, { id: attemptId, taskId, llm: 'scripted', model: null, status: 'running', branchPrefix: 'armada', baseBranch: 'main', options: {}, description: '' });
  await insertProcess(stack.db, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  const entries: LogEntry[] = [
    { level: 'info', message: 'plain', timestamp: '2026-11-28T10:00:00.123456Z', source: 'stdout' },
    { level: 'warn', message: 'coloured', raw: '\u001b[33mcoloured\u001b[0m', timestamp: '2026-11-28T10:00:00.999999Z', source: 'stderr' },
    { level: 'error', message: 'with metadata', metadata: { tool: 'bash', n: 1.5, nested: { ok: true, list: [1, 'two', null] } }, timestamp: '2026-11-28T10:00:01.000500Z', source: 'stdout' },
    { level: 'debug', message: '', raw: '', timestamp: '1969-12-31T23:59:59.999500Z', source: 'stdout' },
    { level: 'info', message: 'raw empty, message not', raw: '', timestamp: '1969-12-31T23:59:59.000500Z', source: 'stdout' },
    { level: 'info', message: 'unicode ✓ \u{1F680} straße', metadata: {}, timestamp: '2026-11-28T10:00:02Z', source: 'system' },
  ];
  await appendLogs(stack.db, processId, attemptId, entries);

  const bySeq = <T extends { seq: number }>(rows: T[]): T[] => [...rows].sort((a, b) => a.seq - b.seq);
  const expected = bySeq(await readLogs(stack.db, { processIds: [processId] }));
  expect(expected).toHaveLength(entries.length);
  const got = await readNewRows(stack.db, [processId], [0], 1000);
  expect(got).toEqual(expected);
  expect(got.map((r) => r.ts.toISOString())).toEqual(expected.map((r) => r.ts.toISOString()));
  // resuming after a seq and the per-process limit
  expect(await readNewRows(stack.db, [processId], [2], 2)).toEqual(expected.slice(2, 4));
}, 60_000);
