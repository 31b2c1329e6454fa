/**
 * PostgreSQL taking no writes for a while (`default_transaction_read_only` turned on, as on a standby after a failover:
 * SQLSTATE 25006) under the worker, not only under the API (test/integration/postgresHalfBroken.test.ts): an
 * attempt's agent and a scheduler script run go on printing meanwhile, and both end while the database is still
 * read-only. Their log lines wait in the worker, and their projection writes (the process and attempt rows, the
 * execution and its task outcome) wait too: once the database takes writes again every line is there once, in order,
 * and both finish `completed`, neither failed nor run again.
 *
 * The server is a PostgreSQL of this file's own (test/support/ownPostgres.ts): `ALTER SYSTEM` and a reload reach every
 * session at once, the worker's pooled ones included, which the run's shared server must not be put through.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { asAdministrator, untilNewSessionsAre } from '../support/readOnlyPostgres';
import { closeSchedulerStack, schedulerInject } from '../support/schedulerStack';

jest.setTimeout(300_000);

const LINES = 300;
const FIRST = 150;
/** Where the test says "go on" (the database is read-only now); each run leaves its own file once it has printed all. */
const marks = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-read-only-marks-'));
const GO_ON = path.join(marks, 'go-on');
const ended = (who: 'agent' | 'script') => path.join(marks, `${who}-ended`);
/**
 * FIRST numbered lines, then (once the test says so: the database is read-only) the rest, then its end mark: so its
 * last lines and its end fall inside the read-only spell whatever the machine's load.
 */
const chatty = (who: 'agent' | 'script') =>
  `i=1; while [ $i -le ${FIRST} ]; do echo "line $i"; i=$((i+1)); done; while [ ! -e ${GO_ON} ]; do sleep 0.1; done; ` +
  `while [ $i -le ${LINES} ]; do echo "line $i"; i=$((i+1)); done; touch ${ended(who)}`;

/** How long the spell lasts after both runs ended: their end's writes are tried and refused meanwhile. */
const READ_ONLY_MS = 5000;

let home: string;
let pg: OwnPostgres;
let stack: TestStack;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-worker-read-only-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  stack = await startTestStack({
    databaseUrl: pg.url,
    services: ['task', 'scheduler'],
    worker: true,
    // nice 0: the agent and the script are not starved by the rest of a loaded machine (the default is 19)
    file: agentConfig({ agents: { chatty: { command: ['sh', '-c', chatty('agent')], format: 'text' } }, scheduler: { healthCheckIntervalSeconds: 0 }, processes: { nice: 0 } }),
  });
}, 240_000);

afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(marks, { recursive: true, force: true });
});

const count = async (sql: string, id: string) => (await stack.db.query<{ n: number }>(sql, [id])).rows[0]?.n ?? 0;
const agentLines = (processId: string) => count("SELECT count(*)::int AS n FROM process_logs WHERE process_id = $1 AND message LIKE 'line %'", processId);
const scriptLines = (executionId: string) => count("SELECT count(*)::int AS n FROM scheduler_execution_logs WHERE execution_id = $1 AND message LIKE 'line %'", executionId);
const numbered = Array.from({ length: LINES }, (_v, i) => `line ${i + 1}`);

/** The state of a run that did not end in time: its rows, its workflow's pending activities, the agent's processes. */
async function whyNotEnded(attemptId: string, processId: string, executionId: string): Promise<string> {
  const rows = async (sql: string) => JSON.stringify((await stack.db.query(sql, [attemptId])).rows);
  const client = await stack.temporal.client();
  const d = await client.workflow.getHandle(`attempt:${attemptId}`).describe().catch((e: Error) => e.message);
  const pid = (await stack.db.query('SELECT pid FROM processes WHERE attempt_id = $1', [attemptId])).rows[0]?.pid as number;
  const procInfo = (p: number): string => {
    try {
      const st = fs.readFileSync(`/proc/${p}/status`, 'utf8').split('\n').filter((l) => /^(State|PPid)/.test(l)).join(' ');
      const kids = fs.readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      return `${p}: ${st} wchan=${fs.readFileSync(`/proc/${p}/wchan`, 'utf8')} children=[${kids}] ${kids ? kids.split(/\s+/).map((k) => procInfo(Number(k))).join('; ') : ''}`;
    } catch (e) {
      return `${p}: ${(e as Error).message}`;
    }
  };
  const execution = (await schedulerInject(stack)('GET', `/api/v1/executions/${executionId}`)).json();
  return [
    `agent process ${procInfo(pid)}; lines stored ${await agentLines(processId)}`,
    `attempt ${await rows('SELECT * FROM attempts WHERE id = $1')}`,
    `processes ${await rows('SELECT * FROM processes WHERE attempt_id = $1')}`,
    `workflow ${JSON.stringify(typeof d === 'string' ? d : { status: d.status, pending: (d.raw as { pendingActivities?: unknown }).pendingActivities })}`,
    `execution ${JSON.stringify(execution)}; lines stored ${await scriptLines(executionId)}`,
  ].join('\n');
}

test('read-only PostgreSQL under the worker: an attempt and a scheduler run keep every line and finish completed once it takes writes again', async () => {
  const h = api(stack);
  const p = await h.project();
  const inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/workflows', { name: 'chatty-script', tasks: [{ name: 'chatty', type: 'script', script: chatty('script') }] })).statusCode).toBe(201);
  const started = await h.start(await h.task(p.id, 'chatty through a read-only spell'), 'chatty');
  const run = await inject('POST', '/api/v1/workflows/chatty-script/run');
  expect(run.statusCode).toBeLessThan(300);
  const executionId = run.json().executionId as string;
  // the first lines of each are stored before the spell
  await eventually(async () => (await agentLines(started.processId)) === FIRST && (await scriptLines(executionId)) === FIRST, 60_000, 50);

  let during: { agent: number; script: number };
  let atEnd: { agent: number; script: number };
  await asAdministrator(pg.url, 'ALTER SYSTEM SET default_transaction_read_only = on');
  try {
    await untilNewSessionsAre(pg.url, 'on');
    during = { agent: await agentLines(started.processId), script: await scriptLines(executionId) };
    fs.writeFileSync(GO_ON, '');
    // both print the rest and end while the database takes no writes; then a few seconds more
    await eventually(async () => fs.existsSync(ended('agent')) && fs.existsSync(ended('script')), 60_000, 100);
    await new Promise((r) => setTimeout(r, READ_ONLY_MS));
    atEnd = { agent: await agentLines(started.processId), script: await scriptLines(executionId) };
  } finally {
    await asAdministrator(pg.url, 'ALTER SYSTEM RESET default_transaction_read_only');
  }
  await untilNewSessionsAre(pg.url, 'off');
  // nothing was written meanwhile: the lines waited in the worker
  expect(atEnd).toEqual(during);
  expect(during).toEqual({ agent: FIRST, script: FIRST });

  const attempt = await h.until(started.attemptId, ['completed', 'failed', 'cancelled'], 60_000).catch(async (err: Error) => {
    throw new Error(`${err.message}\n${await whyNotEnded(started.attemptId, started.processId, executionId)}`);
  });
  expect(attempt.status).toBe('completed');
  const { rows } = await stack.db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [started.processId]);
  expect(rows.filter((r) => r.message.startsWith('line ')).map((r) => r.message)).toEqual(numbered);
  expect(rows.map((r) => r.seq)).toEqual(rows.map((_r, i) => i + 1)); // no gap, no repeat
  expect(rows.filter((r) => /left out/.test(r.message))).toEqual([]);
  // one process, run once: not started again after a failed write
  expect(await count('SELECT count(*)::int AS n FROM processes WHERE attempt_id = $1', started.attemptId)).toBe(1);

  const execution = await eventually(async () => {
    const e = (await inject('GET', `/api/v1/executions/${executionId}`)).json();
    return e.status !== 'running' && e;
  }, 120_000);
  expect(execution.status).toBe('completed');
  const logs = (await inject('GET', `/api/v1/executions/${executionId}/logs`)).json().logs as { message: string }[];
  expect(logs.map((l) => l.message).filter((m) => m.startsWith('line '))).toEqual(numbered);
  // one execution of the run: no second one started by a retry
  const executions = (await inject('GET', '/api/v1/executions?workflow=chatty-script&limit=100')).json().executions as unknown[];
  expect(executions).toHaveLength(1);
});
