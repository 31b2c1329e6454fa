/**
 * A cancel that lands between a follow-up's resume (the attempt running again) and its runAgent's process row. Seen
 * once in about ten tries of outside round seven's 20 mixed concurrent requests (test/integration/outsideFuzzing7):
 * the cancel found no running process to end, the row was then inserted `running`, the agent was started (its pid
 * recorded) and killed about 0.5 s later by runAgent's own watch of the attempt row. The insert now reads the
 * attempt's row (FOR SHARE) and writes the process `cancelled` when the attempt is, so runAgent returns before
 * anything is spawned. The worker's test-only fault point `runAgent.beforeInsert` (lib/faults.ts) sends the API's
 * cancel at exactly that moment. The row written `cancelled` publishes its `process_stopped` (status `cancelled`),
 * read here over a listening /ws/events as a board follows it: before, it published nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import WebSocket from 'ws';
import { recordAttemptCancelled } from '../../lib/attempts/projections';
import { insertProcess } from '../../lib/db/processes';
import type { Faults } from '../../lib/faults';
import type { RunningWorkers } from '../../workers/createWorker';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api, SCRIPTED_AGENT } from '../support/attemptHelpers';

let stack: TestStack;
let workers: RunningWorkers;
let h: ReturnType<typeof api>;
const faults: Faults = {};
let tmp: string;
let runLog: string;
let wsBase: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cancel-before-row-'));
  runLog = path.join(tmp, 'runs.log');
  // each run of the agent appends its attempt's id to runLog first thing (test/fixtures/agents/scripted-agent.js)
  const counted = { command: [process.execPath, SCRIPTED_AGENT], format: 'text', resumeArgs: [], env: { ARMADA_TEST_RUN_LOG: runLog } };
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig({ agents: { scripted: counted } }) });
  workers = await startStackWorkers(stack, { faults });
  h = api(stack);
  wsBase = (await stack.app('task').listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws');
});
afterAll(async () => {
  await workers?.stop();
  await stack?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

interface StreamEvent {
  type: string;
  data: Record<string, unknown>;
}
/** The domain events of `topic` as /ws/events sends them from now on (stream.ready left out). */
function followEvents(topic: string): Promise<{ ws: WebSocket; events: StreamEvent[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${wsBase}/ws/events?topics=${encodeURIComponent(topic)}`);
    const events: StreamEvent[] = [];
    ws.on('message', (d) => {
      const e = JSON.parse(String(d)) as StreamEvent;
      if (e.type !== 'stream.ready') events.push(e);
    });
    ws.on('open', () => resolve({ ws, events }));
    ws.on('error', reject);
  });
}

const runsOf = (attemptId: string) => (fs.existsSync(runLog) ? fs.readFileSync(runLog, 'utf8').split('\n').filter((l) => l === attemptId).length : 0);

test('a cancel answered after a follow-up resumed the attempt, before its process row: the row is cancelled, no agent is started, the attempt ends cancelled', async () => {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'Cancelled between resume and process row'));
  const done = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(done.status).toBe('completed');
  expect(runsOf(attemptId)).toBe(1);

  let reached: Record<string, unknown> | undefined;
  let cancel: { status: number; attempt: Record<string, unknown> } | undefined;
  let attemptWhenReached: string | undefined;
  faults['runAgent.beforeInsert'] = async (info) => {
    if (info.attemptId !== attemptId || info.kind !== 'follow_up') return;
    reached = info;
    attemptWhenReached = (await h.attempt(attemptId)).status;
    const r = await h.inject('POST', `/api/attempts/${attemptId}/cancel`);
    cancel = { status: r.statusCode, attempt: r.json().data };
  };
  const stream = await followEvents(`attempt:${attemptId}`);
  expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'FOLLOWUP write notes' })).statusCode).toBe(202);

  const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
  const result = await handle.result().catch((err: Error) => `${err.name}: ${err.message}`);
  // the hook ran where it should: the follow-up had resumed the attempt, and the cancel was answered then
  expect(attemptWhenReached).toBe('running');
  expect(cancel?.status).toBe(200);
  expect(cancel?.attempt.status).toBe('cancelled');

  const processId = reached?.processId as string;
  const { rows } = await stack.db.query<{ status: string; pid: number | null; error: string | null; finished_at: Date | null; cancelled_at: Date | null }>(
    'SELECT status, pid, error, finished_at, cancelled_at FROM processes WHERE id = $1',
    [processId],
  );
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ status: 'cancelled', pid: null, error: 'attempt cancelled' });
  expect(rows[0]?.finished_at).toBeInstanceOf(Date);
  expect(rows[0]?.cancelled_at).toBeInstanceOf(Date);
  // no agent ran: none started for the follow-up (the run log), none wrote its notes, no process_started event
  expect(runsOf(attemptId)).toBe(1);
  const a = await h.attempt(attemptId);
  expect(a.status).toBe('cancelled');
  expect(fs.existsSync(path.join(a.worktreePath as string, 'notes.txt'))).toBe(false);
  const started = await stack.db.query(`SELECT 1 FROM events WHERE type = 'process_started' AND data->>'processId' = $1`, [processId]);
  expect(started.rowCount).toBe(0);
  // a board following the attempt's events sees the row cancelled without a reload: its process_stopped, once
  const ended = await eventually(async () => {
    const e = stream.events.filter((x) => x.type === 'process_stopped' && x.data.processId === processId);
    return e.length > 0 ? e : undefined;
  }, 10_000, 100);
  expect(ended.map((e) => e.data)).toEqual([expect.objectContaining({ processId, attemptId, status: 'cancelled', error: 'attempt cancelled', duration: 0 })]);
  expect(stream.events.some((e) => e.type === 'process_started' && e.data.processId === processId)).toBe(false);
  stream.ws.close();
  // the process answers as cancelled through the API as well, and the attempt stays so
  const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
  expect([proc.status, proc.pid ?? null]).toEqual(['cancelled', null]);
  // the run ends as the cancel asked: runAgent's `cancelled` result, or Temporal's cancellation of the activity when it
  // reached the worker first (the workflow's cancel was requested before runAgent returned); never a failure
  expect(['cancelled', 'WorkflowFailedError: Workflow execution cancelled']).toContain(result);
  expect(['COMPLETED', 'CANCELLED']).toContain((await handle.describe()).status.name);
  expect((await h.attempt(attemptId)).status).toBe('cancelled');
}, 120_000);

test('a process insert meeting a cancel in progress (the attempt row held FOR UPDATE) waits for it and writes the row cancelled', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'Insert waits for a cancel');
  const created = await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted' });
  expect(created.statusCode).toBe(200);
  const attemptId = created.json().data.id as string;
  // the API's cancel, as cancelAttempt runs it: the attempt's row locked, cancelled, its running processes ended
  const cancel = new Client({ connectionString: stack.dbUrl });
  await cancel.connect();
  try {
    await cancel.query('BEGIN');
    await cancel.query('SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE', [attemptId]);
    expect((await recordAttemptCancelled(cancel, attemptId))?.status).toBe('cancelled');
    const pid = (await cancel.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const processId = `proc-${Date.now()}`;
    const inserted = insertProcess(stack.db, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'follow_up', prompt: 'p' });
    // the insert waits for the cancel's lock (asked on another connection: the transaction sees its own snapshot)
    await eventually(async () => {
      const { rows } = await stack.db.query("SELECT 1 FROM pg_stat_activity WHERE pid <> $1 AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO processes%'", [pid]);
      return rows.length > 0;
    });
    await cancel.query('COMMIT');
    const row = await inserted;
    expect([row.status, row.pid, row.error]).toEqual(['cancelled', null, 'attempt cancelled']);
    expect(row.progress).toMatchObject({ stage: 'cancelled', percentage: 100 });
    // its end published once, as any process end is; the insert repeated (a retry of the run) publishes nothing again
    const stoppedEvents = async () =>
      (await stack.db.query<{ status: string }>("SELECT data->>'status' AS status FROM events WHERE type = 'process_stopped' AND data->>'processId' = $1", [processId])).rows;
    expect(await stoppedEvents()).toEqual([{ status: 'cancelled' }]);
    expect((await insertProcess(stack.db, { id: processId, attemptId, taskId, llm: 'scripted', model: null, kind: 'follow_up', prompt: 'p' })).status).toBe('cancelled');
    expect(await stoppedEvents()).toEqual([{ status: 'cancelled' }]);
  } finally {
    await cancel.end();
  }
  // an insert for an attempt that is not cancelled writes the row running, as before; a missing attempt is refused
  const other = await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted' });
  const running = await insertProcess(stack.db, { id: `proc-run-${Date.now()}`, attemptId: other.json().data.id, taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' });
  expect([running.status, running.error, running.finished_at, running.progress.stage]).toEqual(['running', null, null, 'queued']);
  expect((await stack.db.query("SELECT 1 FROM events WHERE data->>'processId' = $1", [running.id])).rowCount).toBe(0);
  await expect(insertProcess(stack.db, { id: `proc-none-${Date.now()}`, attemptId: 'no-such-attempt', taskId, llm: 'scripted', model: null, kind: 'initial', prompt: 'p' })).rejects.toThrow(/foreign key/);
}, 60_000);

test('a cancel answered after the process row was written running, before the agent started: no agent is started, the row and the attempt end cancelled', async () => {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'Cancelled between process row and spawn'));
  const done = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(done.status).toBe('completed');
  expect(runsOf(attemptId)).toBe(1);

  let reached: Record<string, unknown> | undefined;
  let rowWhenReached: string | undefined;
  let cancelStatus: number | undefined;
  faults['runAgent.beforeSpawn'] = async (info) => {
    if (info.attemptId !== attemptId || info.kind !== 'follow_up') return;
    reached = info;
    rowWhenReached = (await stack.db.query<{ status: string }>('SELECT status FROM processes WHERE id = $1', [info.processId])).rows[0]?.status;
    cancelStatus = (await h.inject('POST', `/api/attempts/${attemptId}/cancel`)).statusCode;
  };
  try {
    expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'FOLLOWUP write notes' })).statusCode).toBe(202);
    const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
    const result = await handle.result().catch((err: Error) => `${err.name}: ${err.message}`);
    // the hook ran after the row was written running, and the cancel was answered then
    expect(rowWhenReached).toBe('running');
    expect(cancelStatus).toBe(200);
    const processId = reached?.processId as string;
    const { rows } = await stack.db.query<{ status: string; pid: number | null }>('SELECT status, pid FROM processes WHERE id = $1', [processId]);
    expect(rows).toEqual([{ status: 'cancelled', pid: null }]);
    // no agent ran for the follow-up: the run log, its notes and the events say so
    expect(runsOf(attemptId)).toBe(1);
    const a = await h.attempt(attemptId);
    expect(a.status).toBe('cancelled');
    expect(fs.existsSync(path.join(a.worktreePath as string, 'notes.txt'))).toBe(false);
    const started = await stack.db.query(`SELECT 1 FROM events WHERE type = 'process_started' AND data->>'processId' = $1`, [processId]);
    expect(started.rowCount).toBe(0);
    expect(['cancelled', 'WorkflowFailedError: Workflow execution cancelled']).toContain(result);
  } finally {
    delete faults['runAgent.beforeSpawn'];
  }
}, 120_000);
