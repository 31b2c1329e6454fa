/**
 * PostgreSQL killed (kill -9 of its postmaster) right after attempts were accepted, and started again: every start
 * that answered 200 runs to completion, its agent run exactly once, whether the server is back in seconds (crash
 * recovery: `the database system is starting up`, 57P03) or after half a minute; and the same across 15 s of a
 * frozen server (SIGSTOP: a hung host), which refuses nothing and answers nothing until it runs again. The
 * activities wait for PostgreSQL inside themselves (activities/untilPostgresAnswers.ts); before, runAgent's two tries
 * 1 s apart and prepareWorktree's five (1 + 2 + 4 + 8 s) were used up by the outage and the attempt failed with
 * `connect ECONNREFUSED 127.0.0.1:<port>`, the database's address, for API clients to read.
 *
 * The task service and a worker run in this process against a PostgreSQL of this file's own
 * (test/support/ownPostgres.ts); the agent (test/fixtures/agents/scripted-agent.js) appends its attempt id to a file
 * outside the worktree at each run, which counts the runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentConfig, api, SCRIPTED_AGENT } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(600_000);

let home: string;
let pg: OwnPostgres;
let stack: TestStack;
let h: ReturnType<typeof api>;
let runLog: string;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-attempt-pg-'));
  runLog = path.join(home, 'runs.log');
  pg = await startOwnPostgres(path.join(home, 'pg'));
  const base = agentConfig();
  const counted = { command: [process.execPath, SCRIPTED_AGENT], format: 'text', env: { ARMADA_TEST_RUN_LOG: runLog } };
  stack = await startTestStack({
    worker: true,
    databaseUrl: pg.url,
    file: { ...base, agents: { ...base.agents, counted, countedOneAtATime: { ...counted, maxConcurrent: 1 } } },
  });
  h = api(stack);
}, 300_000);

afterAll(async () => {
  await stack?.close();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts one attempt on each of `n` new tasks of one project, at once; each start answers 200 (api().start throws otherwise). */
async function startAttempts(n: number, llm: string, title: string) {
  const p = await h.project();
  const tasks = await Promise.all(Array.from({ length: n }, (_, i) => h.task(p.id, `${title} ${i + 1}`)));
  return Promise.all(tasks.map((t) => h.start(t, llm)));
}

/** Each attempt ends completed, with no error, its changes committed, and its agent ran exactly once. */
async function expectEachCompletedOnce(attemptIds: string[]): Promise<void> {
  const ended = [];
  for (const id of attemptIds) ended.push(await h.until(id, ['completed', 'failed', 'cancelled'], 240_000));
  expect(ended.map((a) => ({ status: a.status, error: a.error }))).toEqual(attemptIds.map(() => ({ status: 'completed', error: null })));
  for (const a of ended) expect(a.changes).toMatchObject({ filesCreated: 1, filesModified: 1 });
  const runs = fs.readFileSync(runLog, 'utf8').split('\n').filter(Boolean);
  const runsOf = Object.fromEntries(attemptIds.map((id) => [id, runs.filter((r) => r === id).length]));
  expect(runsOf).toEqual(Object.fromEntries(attemptIds.map((id) => [id, 1])));
}

/** Until one of the six started attempts' agents runs and the five others wait for their slot (one at a time). */
async function untilOneRunsFiveWait(started: { processId: string }[]): Promise<void> {
  await eventually(async () => {
    const { rows } = await stack.db.query<{ pid: number | null; stage: string | null }>(
      `SELECT pid, progress->>'stage' AS stage FROM processes WHERE id = ANY($1)`,
      [started.map((s) => s.processId)],
    );
    return rows.filter((r) => r.pid && r.pid > 0).length === 1 && rows.filter((r) => r.stage === 'queued').length === 5;
  }, 120_000, 100);
}

test('kill -9 while agents wait for their slot, PostgreSQL back in seconds: every accepted attempt completes, each agent run once', async () => {
  // one agent at a time: the others wait in runAgent's prepare phase, asking PostgreSQL every 500 ms
  const started = await startAttempts(6, 'countedOneAtATime', 'SLOWEDIT one at a time');
  await untilOneRunsFiveWait(started);
  await pg.kill();
  await sleep(3000);
  await pg.start(); // crash recovery first: new connections get 57P03 meanwhile
  await expectEachCompletedOnce(started.map((s) => s.attemptId));
});

test('kill -9 right after six starts, PostgreSQL back after 25 s: every accepted attempt completes, each agent run once', async () => {
  fs.rmSync(runLog, { force: true });
  const started = await startAttempts(6, 'counted', 'edit after a long outage');
  await pg.kill();
  await sleep(25_000);
  await pg.start();
  await expectEachCompletedOnce(started.map((s) => s.attemptId));
});

test('frozen (SIGSTOP) for 15 s while one agent runs and five wait for their slot: every accepted attempt completes, each agent run once', async () => {
  // nothing is refused: each query of the worker waits on the frozen server (its log lines, the running agent's end,
  // the queued ones' looks for a slot) while the activities heartbeat to Temporal, and gets its answer at the thaw
  const started = await startAttempts(6, 'countedOneAtATime', 'SLOWEDIT frozen');
  await untilOneRunsFiveWait(started);
  const thaw = pg.freeze();
  try {
    await sleep(15_000);
  } finally {
    thaw();
  }
  await expectEachCompletedOnce(started.map((s) => s.attemptId));
});
