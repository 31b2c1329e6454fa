/**
 * An attempt's workflow ended from Temporal's own tools rather than Armada's API, on the real dev server:
 *
 * - terminated (`temporal workflow terminate`, the UI) while its agent runs: the try's heartbeat gets "not found", as
 *   a try Temporal timed out does; it asks Temporal, finds the workflow closed, stops the agent's group and records the
 *   attempt cancelled (its task back to `pending`), the log ending with `the workflow was terminated in Temporal
 *   (reason: …); the agent was stopped`. Before (session 48) the try took it for a timeout (`Temporal timed this try
 *   out …; the agent goes on`), the agent ran to its end or its timeout, and the attempt stayed `running` for good.
 * - terminated while the attempt waits for an agent slot (no agent runs): the closed-workflow reconciler
 *   (lib/attempts/closedWorkflows.ts, the task API's pass every minute) records it cancelled; before, nothing did.
 * - terminated while its start is still pending (its confirmation lost): the start reconciler, which repeats the
 *   workflow start, never starts a new run of the closed id (before session 49 it did: the attempt ran again), and
 *   records it cancelled as the closed-workflow reconciler would; so does a replay of the start with its
 *   Idempotency-Key (the same attempt answered, no new run).
 * - cancelled from Temporal's side while the worktree is made (held at a fault point): the workflow records the
 *   attempt cancelled (patch `cancel-while-preparing-recorded`), and the held prepareWorktree, once it goes on, finds
 *   it so and removes the worktree it made. Before, the attempt stayed `running`.
 *
 * Each: nothing flips the attempt back (a reconciler pass, a wait).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { reconcileClosedAttemptWorkflows } from '../../lib/attempts/closedWorkflows';
import { reconcilePendingStarts } from '../../api/task/attemptService';
import { startClosedWorkflowReconciler } from '../../api/task/closedWorkflowReconciler';
import { createLogger } from '../../lib/logger';
import { groupAlive } from '../../lib/process/processGroup';
import { agentConfig, api, recordHistory } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';

jest.setTimeout(120_000);

let stack: TestStack;
/** prepareWorktree waits at its fault point while set (the worktree made, before it is recorded on the attempt) */
let hold: { reached: (path: string) => void; release: Promise<void> } | undefined;

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: agentConfig(),
    faults: {
      'prepareWorktree.beforeRecord': async (info) => {
        const h = hold;
        if (!h) return;
        h.reached(info.worktreePath as string);
        await h.release;
      },
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

const h = {
  ...api({ app: (name) => stack.app(name) }),
};

interface LogLine {
  level: string;
  message: string;
}

const logsOf = (processId: string): Promise<LogLine[]> => h.logs(processId);

const taskStatus = async (taskId: string) => (await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status as string;
const processStatus = async (processId: string) => (await h.inject('GET', `/api/processes/${processId}`)).json().data.status as string;
const handleOf = async (attemptId: string) => (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);

/**
 * An attempt waiting for `single`'s slot (maxConcurrent 1), held by another attempt's running agent: no agent runs for
 * it to notice a terminate. Cancel `holder` at the end.
 */
async function attemptWaitingForSlot(headers?: Record<string, string>) {
  const p = await h.project();
  const holderTask = await h.task(p.id, 'SLEEP until ended');
  const holder = await h.start(holderTask, 'single');
  await eventually(async () => (await h.inject('GET', `/api/processes/${holder.processId}`)).json().data.pid as number | null, 30_000);
  const taskId = await h.task(p.id, 'SLEEP until ended');
  const { attemptId, processId } = await h.start(taskId, 'single', headers);
  await eventually(async () => (await logsOf(processId)).some((l) => l.message.startsWith('waiting for a free single slot')), 30_000);
  return { holder, taskId, attemptId, processId };
}

/** Both reconcilers that could touch an attempt run a pass, then a while passes: the attempt and its task stay as they are. */
async function staysSettled(attemptId: string, taskId: string, processId: string): Promise<void> {
  const client = await stack.temporal.client();
  const deps = { db: stack.db, config: stack.config, temporal: stack.temporal, metrics: stack.metrics };
  await reconcilePendingStarts(deps as Parameters<typeof reconcilePendingStarts>[0], 0);
  expect((await reconcileClosedAttemptWorkflows(stack.db, client, 0)).recorded).not.toContain(attemptId);
  await new Promise((r) => setTimeout(r, 3000));
  expect((await h.attempt(attemptId)).status).toBe('cancelled');
  expect(await taskStatus(taskId)).toBe('pending');
  expect(await processStatus(processId)).toBe('cancelled');
  expect((await (await handleOf(attemptId)).describe()).status.name).not.toBe('RUNNING');
}

test('terminated in Temporal while its agent runs: the agent is stopped and the attempt recorded cancelled', async () => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'SLEEP until ended');
  const { attemptId, processId } = await h.start(taskId);
  const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null, 30_000);
  await eventually(async () => (await logsOf(processId)).some((l) => l.message === 'still working'), 30_000);

  await (await handleOf(attemptId)).terminate('ops cleanup');
  // the try hears "not found" at its next heartbeat (throttled to 0.8 × the 5 s heartbeat timeout), then asks Temporal
  await eventually(async () => !groupAlive(pid), 30_000, 100);
  expect((await h.until(attemptId, ['cancelled'], 30_000)).status).toBe('cancelled');
  expect(await processStatus(processId)).toBe('cancelled');
  expect(await taskStatus(taskId)).toBe('pending');

  const logs = await logsOf(processId);
  expect(logs.at(-1)?.message).toMatch(/^the workflow was terminated in Temporal \(reason: ops cleanup\); the agent was stopped \(exit SIG(TERM|KILL)\)$/);
  expect(logs.filter((l) => /^the workflow was terminated/.test(l.message))).toHaveLength(1);
  expect(logs.some((l) => l.message.startsWith('Temporal timed this try out'))).toBe(false);
  expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  await staysSettled(attemptId, taskId, processId);
});

test('terminated in Temporal while the attempt waits for an agent slot: the closed-workflow reconciler records it cancelled', async () => {
  // `single` has maxConcurrent 1: the first attempt's agent holds the slot, the second waits for it
  const { holder, taskId, attemptId, processId } = await attemptWaitingForSlot();

  await (await handleOf(attemptId)).terminate('stuck in the queue');
  // no agent ran to notice it: the waiting try ends with the cancellation, and the rows stay as they were
  await new Promise((r) => setTimeout(r, 8000));
  expect((await h.attempt(attemptId)).status).toBe('running');
  // until the reconciler's pass (the task API's, here every 500 ms and with no grace after the close)
  const lines: { msg: string; attempts?: string[] }[] = [];
  const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(JSON.parse(l)) });
  const file = { ...stack.config.file, attempts: { ...stack.config.file.attempts, closedWorkflowGraceMs: 0 } };
  const { llm } = await h.attempt(attemptId);
  const cancelledCount = async () =>
    Number(new RegExp(`armada_attempts_total\\{llm="${llm}",status="cancelled"\\} (\\d+)`).exec((await h.inject('GET', '/metrics')).body)?.[1] ?? 0);
  const cancelledBefore = await cancelledCount();
  const reconciler = startClosedWorkflowReconciler({ db: stack.db, config: { ...stack.config, file }, temporal: stack.temporal, metrics: stack.metrics, logger }, { everyMs: 500 });
  try {
    expect((await h.until(attemptId, ['cancelled'], 30_000)).status).toBe('cancelled');
  } finally {
    await reconciler.stop();
  }
  // counted as a cancel (until session 51 the reconciler's were not counted)
  expect(await cancelledCount()).toBe(cancelledBefore + 1);
  expect(lines.some((l) => l.attempts?.includes(attemptId) && /^recorded attempts cancelled whose workflow Temporal had closed/.test(l.msg))).toBe(true);
  expect(await taskStatus(taskId)).toBe('pending');
  expect(await processStatus(processId)).toBe('cancelled');
  const logs = await logsOf(processId);
  expect(logs.some((l) => l.message === 'the workflow was terminated in Temporal (reason: stuck in the queue) while the attempt ran; the attempt is recorded cancelled')).toBe(true);
  // the slot's holder runs on, untouched
  expect((await h.attempt(holder.attemptId)).status).toBe('running');
  await staysSettled(attemptId, taskId, processId);
  expect((await h.inject('POST', `/api/attempts/${holder.attemptId}/cancel`)).statusCode).toBe(200);
});

test('terminated in Temporal while its start is still pending: the start reconciler never starts it again, and records it as the closed-workflow reconciler does', async () => {
  // the attempt waits for `single`'s slot (no agent runs to notice the terminate), as in the test before
  const { holder, taskId, attemptId, processId } = await attemptWaitingForSlot();
  // its start left pending, as when the API process that started the workflow died before confirming it (phase 3)
  await stack.db.query(`UPDATE attempts SET start_pending_since = now() - interval '1 hour' WHERE id = $1`, [attemptId]);
  const handle = await handleOf(attemptId);
  const { runId } = await handle.describe();
  await handle.terminate('stuck while starting');

  // the closed-workflow reconciler leaves a pending start to the start reconciler
  const client = await stack.temporal.client();
  expect((await reconcileClosedAttemptWorkflows(stack.db, client, 0)).recorded).not.toContain(attemptId);
  // (the task API's own start reconciler, every 15 s, may be the one that takes it: the outcome is the same)
  const deps = { db: stack.db, config: stack.config, temporal: stack.temporal, metrics: stack.metrics };
  await reconcilePendingStarts(deps as Parameters<typeof reconcilePendingStarts>[0], 0);
  // no new run of the id (before session 49: a new run, RUNNING, and the attempt `running` again for good)
  const latest = await (await handleOf(attemptId)).describe();
  expect({ runId: latest.runId, status: latest.status.name }).toEqual({ runId, status: 'TERMINATED' });
  const runs: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = 'attempt:${attemptId}'` })) runs.push(w.runId);
  expect(runs.filter((r) => r !== runId)).toEqual([]);
  // recorded as the closed-workflow reconciler records it: start confirmed, then cancelled with the line saying why
  const row = (await stack.db.query('SELECT status, start_pending_since FROM attempts WHERE id = $1', [attemptId])).rows[0];
  expect(row).toEqual({ status: 'cancelled', start_pending_since: null });
  expect(await taskStatus(taskId)).toBe('pending');
  expect(await processStatus(processId)).toBe('cancelled');
  const logs = await logsOf(processId);
  expect(logs.filter((l) => l.message === 'the workflow was terminated in Temporal (reason: stuck while starting) while the attempt ran; the attempt is recorded cancelled')).toHaveLength(1);
  const events = (
    await stack.db.query<{ type: string }>(`SELECT type FROM events WHERE data->>'attemptId' = $1 AND type LIKE 'attempt.%' ORDER BY seq`, [attemptId])
  ).rows.map((e) => e.type);
  expect(events.at(-1)).toBe('attempt.cancelled');
  expect(events.filter((t) => t === 'attempt.cancelled')).toHaveLength(1);
  // a start repeated again (another pass, another API process) starts nothing either
  await staysSettled(attemptId, taskId, processId);
  expect((await (await handleOf(attemptId)).describe()).runId).toBe(runId);
  expect((await h.attempt(holder.attemptId)).status).toBe('running');
  expect((await h.inject('POST', `/api/attempts/${holder.attemptId}/cancel`)).statusCode).toBe(200);
});

test('terminated in Temporal while its start is pending, then the start sent again with its Idempotency-Key: the replay answers the same attempt and starts no new run', async () => {
  const key = { 'idempotency-key': `terminated-${crypto.randomUUID()}` };
  const { holder, taskId, attemptId, processId } = await attemptWaitingForSlot(key);
  // its first request's confirmation lost (the API died after the workflow start), then the run terminated
  await stack.db.query(`UPDATE attempts SET start_pending_since = now() - interval '1 hour' WHERE id = $1`, [attemptId]);
  const handle = await handleOf(attemptId);
  const { runId } = await handle.describe();
  await handle.terminate('stuck before the retry');

  // the client sends its start again, as told after a lost answer: the same attempt, and no new run of the closed id
  const again = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'single' }, key);
  expect(again.statusCode).toBe(200);
  expect(again.json().data).toMatchObject({ attemptId, processId, status: 'cancelled' });
  const client = await stack.temporal.client();
  const runs: string[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = 'attempt:${attemptId}'` })) runs.push(w.runId);
  expect(runs).toEqual([runId]);
  // recorded as the closed-workflow reconciler records it, once
  const row = (await stack.db.query('SELECT status, start_pending_since FROM attempts WHERE id = $1', [attemptId])).rows[0];
  expect(row).toEqual({ status: 'cancelled', start_pending_since: null });
  expect(await taskStatus(taskId)).toBe('pending');
  const logs = await logsOf(processId);
  expect(logs.filter((l) => l.message === 'the workflow was terminated in Temporal (reason: stuck before the retry) while the attempt ran; the attempt is recorded cancelled')).toHaveLength(1);
  await staysSettled(attemptId, taskId, processId);
  expect((await h.inject('POST', `/api/attempts/${holder.attemptId}/cancel`)).statusCode).toBe(200);
});

test("cancelled from Temporal's side while its worktree is made: the attempt is recorded cancelled and the worktree removed", async () => {
  let reached!: (path: string) => void;
  const at = new Promise<string>((r) => {
    reached = r;
  });
  let release!: () => void;
  hold = { reached, release: new Promise<void>((r) => (release = r)) };
  try {
    const p = await h.project();
    const taskId = await h.task(p.id, 'write a file');
    const { attemptId, processId } = await h.start(taskId);
    const worktreePath = await at;
    expect(fs.existsSync(worktreePath)).toBe(true);

    const handle = await handleOf(attemptId);
    await handle.cancel();
    await eventually(async () => (await handle.describe()).status.name === 'CANCELLED', 30_000, 200);
    expect((await h.until(attemptId, ['cancelled'], 30_000)).status).toBe('cancelled');
    expect(await taskStatus(taskId)).toBe('pending');
    expect(await processStatus(processId)).toBe('cancelled');
    const logs = await logsOf(processId);
    expect(logs.some((l) => l.message === "the workflow was cancelled in Temporal while the attempt's worktree was being made; the attempt is recorded cancelled")).toBe(
      true,
    );
    await recordHistory(stack, handle.workflowId, 'attempt-cancelled-in-temporal-while-preparing');

    // the held activity goes on: it finds the attempt cancelled and removes what it made
    release();
    await eventually(async () => !fs.existsSync(worktreePath), 30_000, 200);
    await staysSettled(attemptId, taskId, processId);
  } finally {
    hold = undefined;
    release?.();
  }
});
