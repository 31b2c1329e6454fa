/**
 * Agent output printed while PostgreSQL is unreachable is kept (lib/attempts/logSink.ts): the worker holds the lines
 * and writes them once it is back, every line once, in order. The same for a scheduler script task's log. Before, a batch whose insert failed three times (1.5 s)
 * was dropped: a PostgreSQL restart lost the lines printed meanwhile. The worker's pool reaches PostgreSQL through a
 * TCP proxy that refuses connections (and breaks open ones) for the outage; the API's pool is not cut.
 */
import { createLogSink } from '../../lib/attempts/logSink';
import { createPool, type Queryable } from '../../lib/db/pool';
import type { LogEntry } from '../../lib/db/processes';
import type { RunningWorkers } from '../../workers/createWorker';
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, logger, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { runWorkflowToEnd, schedulerInject } from '../support/schedulerStack';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

const LINES = 400;
// one numbered line every ~10 ms: ~5 s of output, the outage in its middle
const CHATTY = `i=1; while [ $i -le ${LINES} ]; do echo "line $i"; i=$((i+1)); sleep 0.01; done`;

let stack: TestStack;
let proxy: TcpProxy;
let workerDb: ReturnType<typeof createPool>;
let workers: RunningWorkers;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task', 'scheduler'],
    file: agentConfig({ agents: { chatty: { command: ['sh', '-c', CHATTY], format: 'text' }, quick: { command: ['true'], format: 'text' } }, scheduler: { healthCheckIntervalSeconds: 0 } }),
  });
  const url = new URL(stack.dbUrl);
  proxy = await startTcpProxy(`${url.hostname}:${url.port}`);
  const proxied = new URL(stack.dbUrl);
  [proxied.hostname, proxied.port] = proxy.address.split(':') as [string, string];
  workerDb = createPool(proxied.toString(), logger, { max: 10, connectionTimeoutMillis: 1000 });
  workers = await startStackWorkers(stack, { db: workerDb });
}, 120_000);
afterAll(async () => {
  proxy?.setMode('forward');
  await workers?.stop();
  await workerDb?.end();
  await proxy?.close();
  await stack?.close();
});

test('lines an agent prints during a PostgreSQL outage of the worker are all stored, once and in order, when it is back', async () => {
  const h = api(stack);
  const p = await h.project();
  const started = await h.start(await h.task(p.id, 'chatty through an outage'), 'chatty');
  // the outage begins once the first lines are stored, and lasts 3 s (twice what a batch was retried for)
  await eventually(async () => (await stack.db.query('SELECT count(*)::int AS n FROM process_logs WHERE process_id = $1', [started.processId])).rows[0].n >= 20, 20_000, 20);
  proxy.setMode('refuse');
  const during = (await stack.db.query('SELECT count(*)::int AS n FROM process_logs WHERE process_id = $1', [started.processId])).rows[0].n as number;
  await new Promise((r) => setTimeout(r, 3000));
  // the agent went on printing meanwhile, and none of it reached the database
  expect((await stack.db.query('SELECT count(*)::int AS n FROM process_logs WHERE process_id = $1', [started.processId])).rows[0].n).toBe(during);
  proxy.setMode('forward');

  const attempt = await h.until(started.attemptId, ['completed', 'failed'], 60_000);
  expect(attempt.status).toBe('completed');
  const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [started.processId]);
  const numbered = rows.filter((r) => r.message.startsWith('line '));
  expect(numbered.map((r) => r.message)).toEqual(Array.from({ length: LINES }, (_v, i) => `line ${i + 1}`));
  expect(rows.map((r) => r.seq)).toEqual(rows.map((_r, i) => i + 1)); // no gap, no repeat
  expect(during).toBeLessThan(LINES - 100); // the outage really fell in the middle of the output
}, 120_000);

/** A finished attempt's process row for a sink of the test's own to write to, and its last seq so far. */
async function processToWriteTo(title: string): Promise<{ started: { attemptId: string; processId: string }; before: number }> {
  const h = api(stack);
  const p = await h.project();
  const started = await h.start(await h.task(p.id, title), 'quick');
  await h.until(started.attemptId, ['completed', 'failed'], 60_000);
  const before = (await stack.db.query('SELECT max(seq)::int AS n FROM process_logs WHERE process_id = $1', [started.processId])).rows[0].n as number;
  return { started, before };
}

test('an outage longer than the run\'s budget: the newest lines are left out, and one line in their place says how many', async () => {
  const { started, before } = await processToWriteTo('budget');

  const queue: LogEntry[] = [];
  const sink = createLogSink({ db: workerDb, processId: started.processId, attemptId: started.attemptId, queue, logger, maxHeldChars: 100 });
  const line = (message: string): LogEntry => ({ level: 'info', message, timestamp: new Date().toISOString(), source: 'stdout' });
  proxy.setMode('refuse');
  try {
    queue.push(line('held 01'));
    sink.poke();
    // its insert fails: the sink knows PostgreSQL is away (before that, nothing is ever left out)
    await new Promise((r) => setTimeout(r, 1200));
    for (let i = 2; i <= 15; i++) {
      queue.push(line(`held ${String(i).padStart(2, '0')}`)); // 7 characters each: 14 fit in 100
      sink.poke();
    }
    expect(queue.map((e) => e.message)).toEqual(Array.from({ length: 14 }, (_v, i) => `held ${String(i + 1).padStart(2, '0')}`));
    await new Promise((r) => setTimeout(r, 1200)); // inserts tried and failed meanwhile: nothing dropped for that
  } finally {
    proxy.setMode('forward');
  }
  await sink.flush();
  queue.push(line('after the outage'));
  sink.poke();
  await sink.flush();
  sink.close();
  const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 AND seq > $2 ORDER BY seq', [started.processId, before]);
  expect(rows.map((r) => r.message)).toEqual([
    ...Array.from({ length: 14 }, (_v, i) => `held ${String(i + 1).padStart(2, '0')}`),
    '1 line left out here: PostgreSQL was unavailable and the worker already held 100 characters of this run\'s waiting lines',
    'after the outage',
  ]);
  expect(rows.map((r) => r.seq)).toEqual(rows.map((_r, i) => before + i + 1));
}, 120_000);

test('a scheduler script task\'s log lines printed during a PostgreSQL outage of the worker are all stored, in order', async () => {
  const inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name: 'chatty-script', tasks: [{ name: 'chatty', type: 'script', script: CHATTY }] })).statusCode).toBe(201);
  const id = (await inject('POST', '/api/v1/workflows/chatty-script/run')).json().executionId as string;
  const count = async () => (await stack.db.query("SELECT count(*)::int AS n FROM scheduler_execution_logs WHERE execution_id = $1 AND message LIKE 'line %'", [id])).rows[0].n as number;
  await eventually(async () => (await count()) >= 20, 20_000, 20);
  proxy.setMode('refuse');
  const during = await count();
  await new Promise((r) => setTimeout(r, 3000));
  expect(await count()).toBe(during);
  proxy.setMode('forward');
  const execution = await eventually(async () => {
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
    return e.status !== 'running' && e;
  }, 60_000);
  expect(execution.status).toBe('completed');
  const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs as { message: string }[];
  expect(logs.map((l) => l.message).filter((m) => m.startsWith('line '))).toEqual(Array.from({ length: LINES }, (_v, i) => `line ${i + 1}`));
  expect(during).toBeLessThan(LINES - 100);
}, 120_000);

test('with PostgreSQL up, a run printing faster than its lines are stored is kept within its budget: the newest are left out, and a line at the end says how many', async () => {
  const { started, before } = await processToWriteTo('rate');

  const queue: LogEntry[] = [];
  const sink = createLogSink({ db: workerDb, processId: started.processId, attemptId: started.attemptId, queue, logger, maxHeldChars: 100 });
  const line = (message: string): LogEntry => ({ level: 'info', message, timestamp: new Date().toISOString(), source: 'stdout' });
  // 30 lines at once, before any insert could take one: 14 fit in 100 characters
  for (let i = 1; i <= 30; i++) queue.push(line(`fast ${String(i).padStart(2, '0')}`));
  sink.poke();
  await sink.flush();
  sink.close();
  const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 AND seq > $2 ORDER BY seq', [started.processId, before]);
  expect(rows.map((r) => r.message)).toEqual([
    ...Array.from({ length: 14 }, (_v, i) => `fast ${String(i + 1).padStart(2, '0')}`),
    '16 lines left out here: this run printed faster than its lines could be stored, and the worker already held 100 characters of them',
  ]);
}, 120_000);

test('with PostgreSQL up, a script printing 30,000 lines at once keeps its first 10,000 and last 1,000 (the task\'s limit), and nothing is left out for the outage budget', async () => {
  const inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name: 'fast-script', tasks: [{ name: 'fast', type: 'script', script: 'seq 1 30000' }] })).statusCode).toBe(201);
  const { id, execution } = await runWorkflowToEnd(stack, 'fast-script');
  expect(execution.status).toBe('completed');
  const { rows } = await stack.db.query<{ n: number; left: number }>(
    "SELECT count(*) FILTER (WHERE message ~ '^[0-9]+$')::int AS n, count(*) FILTER (WHERE message LIKE '%left out%')::int AS left FROM scheduler_execution_logs WHERE execution_id = $1",
    [id],
  );
  expect(rows[0]).toEqual({ n: 11000, left: 1 });
  const note = await stack.db.query<{ message: string }>("SELECT message FROM scheduler_execution_logs WHERE execution_id = $1 AND message LIKE '%left out%'", [id]);
  expect(note.rows[0]?.message).toBe("19,000 lines left out here: a task's log keeps its first 10,000 and last 1,000 lines");
}, 120_000);

/**
 * The database as the worker saw it when PostgreSQL was killed right after committing the first insert of log lines:
 * that insert is stored, and its caller gets the error of a connection that died.
 */
function answerLostOnce(): { db: Queryable; answersLost: () => number } {
  let lost = 0;
  const db = {
    async query(...args: unknown[]) {
      const result = await (stack.db.query as (...a: unknown[]) => Promise<unknown>)(...args);
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
      if (lost === 0 && text?.includes('INSERT INTO process_logs')) {
        lost++;
        throw new Error('Connection terminated unexpectedly');
      }
      return result;
    },
  } as unknown as Queryable;
  return { db, answersLost: () => lost };
}

test('an insert that committed but whose answer was lost (PostgreSQL cut off between its commit and the reply) is not sent again: each line once, in order', async () => {
  const { started, before } = await processToWriteTo('lost answer');

  const { db: lossy, answersLost } = answerLostOnce();
  const queue: LogEntry[] = [];
  const sink = createLogSink({ db: lossy, processId: started.processId, attemptId: started.attemptId, queue, logger });
  const line = (message: string): LogEntry => ({ level: 'info', message, timestamp: new Date().toISOString(), source: 'stdout' });
  for (let i = 1; i <= 5; i++) queue.push(line(`sent once ${i}`));
  sink.poke();
  await sink.flush();
  queue.push(line('after the lost answer'));
  sink.poke();
  await sink.flush();
  sink.close();
  expect(answersLost()).toBe(1);
  const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 AND seq > $2 ORDER BY seq', [started.processId, before]);
  expect(rows.map((r) => r.message)).toEqual([...Array.from({ length: 5 }, (_v, i) => `sent once ${i + 1}`), 'after the lost answer']);
  expect(rows.map((r) => r.seq)).toEqual(rows.map((_r, i) => before + i + 1));
}, 120_000);

test('the same for the insert that stores the lines of several processes at once: each process\'s lines once, in order', async () => {
  const h = api(stack);
  const p = await h.project();
  const runs = [await h.start(await h.task(p.id, 'lost answer a'), 'quick'), await h.start(await h.task(p.id, 'lost answer b'), 'quick')];
  for (const r of runs) await h.until(r.attemptId, ['completed', 'failed'], 60_000);
  const maxSeq = async (processId: string) => (await stack.db.query('SELECT max(seq)::int AS n FROM process_logs WHERE process_id = $1', [processId])).rows[0].n as number;
  const befores: number[] = [];
  for (const r of runs) befores.push(await maxSeq(r.processId));

  const { db: lossy, answersLost } = answerLostOnce();
  const line = (message: string): LogEntry => ({ level: 'info', message, timestamp: new Date().toISOString(), source: 'stdout' });
  const sinks = runs.map((r, k) => {
    const queue: LogEntry[] = [];
    for (let i = 1; i <= 3; i++) queue.push(line(`process ${k} line ${i}`));
    return { queue, sink: createLogSink({ db: lossy, processId: r.processId, attemptId: r.attemptId, queue, logger }) };
  });
  for (const s of sinks) s.sink.poke(); // both wait for the same insert
  await Promise.all(sinks.map((s) => s.sink.flush()));
  for (const s of sinks) s.sink.close();
  expect(answersLost()).toBe(1);
  for (const [k, r] of runs.entries()) {
    const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 AND seq > $2 ORDER BY seq', [r.processId, befores[k]]);
    expect(rows.map((x) => x.message)).toEqual([1, 2, 3].map((i) => `process ${k} line ${i}`));
    expect(rows.map((x) => x.seq)).toEqual(rows.map((_x, i) => (befores[k] as number) + i + 1));
  }
}, 120_000);
