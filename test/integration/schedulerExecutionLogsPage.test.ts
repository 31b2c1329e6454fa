/**
 * `GET /api/v1/executions/{id}/logs` pages: `offset` and `limit` cut the log in the order it was written, `level` keeps
 * that level and above, and `total` says how many such lines there are, so a client reads a long log in pages instead
 * of one answer of every line (a task's log keeps up to 11,001 lines, and an execution has several tasks). Without
 * `limit` the answer is the first page of DEFAULT_EXECUTION_LOG_PAGE lines (it was every line, however many). Values
 * out of range are the 400 `{detail}` the OpenAPI document describes.
 */
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';
import { DEFAULT_EXECUTION_LOG_PAGE } from '../../api/scheduler/schemas';

let stack: TestStack;
let inject: ReturnType<typeof schedulerInject>;
let id: string;
let workflow: string;
const LEVELS = ['debug', 'info', 'warning', 'error'] as const;

beforeAll(async () => {
  stack = await startSchedulerStack({ worker: false });
  inject = schedulerInject(stack);
  const name = `logpage-${Math.random().toString(36).slice(2, 8)}`;
  workflow = name;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 's', type: 'script', script: 'true' }] })).statusCode).toBe(201);
  const run = await inject('POST', `/api/v1/workflows/${name}/run`);
  expect(run.statusCode).toBe(200);
  id = run.json().executionId;
  // the lines a worker would have written (no worker runs here): 25 of them, levels in turn, all at one instant
  // but the first, so the order within a timestamp is the order of writing
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 0; i < 25; i++) {
    await stack.db.query('INSERT INTO scheduler_execution_logs (execution_id, key, ts, level, message) VALUES ($1, $2, $3, $4, $5)', [id, `test:${i}`, new Date(t0 + (i === 0 ? 0 : 1000)), LEVELS[i % 4], `line ${i}`]);
  }
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const messages = (body: { logs: { message: string }[] }) => body.logs.map((l) => l.message);
const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}`);

test('without limit: a page of DEFAULT_EXECUTION_LOG_PAGE lines, not the whole log; total says how many there are', async () => {
  expect(DEFAULT_EXECUTION_LOG_PAGE).toBe(1_000);
  const run = await inject('POST', `/api/v1/workflows/${workflow}/run`);
  expect(run.statusCode).toBe(200);
  const long = run.json().executionId as string;
  await stack.db.query(
    `INSERT INTO scheduler_execution_logs (execution_id, key, ts, level, message)
     SELECT $1, 'test:' || i, $2::timestamptz + i * interval '1 ms', 'info', 'many ' || i FROM generate_series(1, 2500) i`,
    [long, '2026-01-01T00:00:00Z'],
  );
  const first = (await inject('GET', `/api/v1/executions/${long}/logs`)).json();
  expect(first.logs).toHaveLength(DEFAULT_EXECUTION_LOG_PAGE);
  expect(first.total).toBeGreaterThanOrEqual(2500);
  const rest = (await inject('GET', `/api/v1/executions/${long}/logs?offset=${DEFAULT_EXECUTION_LOG_PAGE}`)).json();
  expect([rest.logs.length, rest.total]).toEqual([DEFAULT_EXECUTION_LOG_PAGE, first.total]);
  // a client asking for more still gets it, up to the 10,000 of one page
  const all = (await inject('GET', `/api/v1/executions/${long}/logs?limit=10000`)).json();
  expect(all.logs).toHaveLength(first.total);
  expect(messages(all).filter((m: string) => m.startsWith('many '))).toEqual(Array.from({ length: 2500 }, (_, i) => `many ${i + 1}`));
});

test('without a query, a log shorter than a page: every line in order, and the total', async () => {
  const r = await inject('GET', `/api/v1/executions/${id}/logs`);
  expect(r.statusCode).toBe(200);
  const body = r.json();
  expect(body.executionId).toBe(id);
  // the API's own start line(s) may come first: the test's lines follow in their order
  expect(messages(body).filter((m: string) => m.startsWith('line '))).toEqual(lines(0, 25));
  expect(body.total).toBe(body.logs.length);
});

test('offset and limit page through the log; the pages put together are the whole log; past the end is empty', async () => {
  const all = messages((await inject('GET', `/api/v1/executions/${id}/logs`)).json());
  const pages: string[] = [];
  for (let offset = 0; ; offset += 7) {
    const body = (await inject('GET', `/api/v1/executions/${id}/logs?offset=${offset}&limit=7`)).json();
    expect(body.total).toBe(all.length);
    pages.push(...messages(body));
    if (offset + 7 >= body.total) break;
    expect(body.logs).toHaveLength(7);
  }
  expect(pages).toEqual(all);
  const past = await inject('GET', `/api/v1/executions/${id}/logs?offset=${all.length + 5}`);
  expect([past.statusCode, past.json().logs, past.json().total]).toEqual([200, [], all.length]);
});

test('level keeps that level and above; total counts those lines', async () => {
  const warn = (await inject('GET', `/api/v1/executions/${id}/logs?level=warning`)).json();
  const expected = lines(0, 25).filter((_, i) => i % 4 >= 2);
  expect(messages(warn).filter((m: string) => m.startsWith('line '))).toEqual(expected);
  expect(warn.logs.every((l: { level: string }) => l.level === 'warning' || l.level === 'error')).toBe(true);
  expect(warn.total).toBe(warn.logs.length);
  const errorsPage = (await inject('GET', `/api/v1/executions/${id}/logs?level=error&offset=1&limit=2`)).json();
  expect([messages(errorsPage), errorsPage.total]).toEqual([['line 7', 'line 11'], 6]);
});

test('a bad offset, limit or level, or an unknown parameter, is the 400 {detail}; an unknown execution the 404', async () => {
  for (const q of ['offset=-1', 'limit=0', 'limit=10001', 'limit=2.5', 'offset=x', 'level=warn', 'level=', 'tail=5']) {
    const r = await inject('GET', `/api/v1/executions/${id}/logs?${q}`);
    expect([q, r.statusCode, typeof r.json().detail]).toEqual([q, 400, 'string']);
  }
  const missing = await inject('GET', '/api/v1/executions/00000000-0000-4000-8000-000000000000/logs?limit=5');
  expect([missing.statusCode, missing.json()]).toEqual([404, { detail: 'Execution not found' }]);
});
