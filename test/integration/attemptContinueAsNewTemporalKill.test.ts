/**
 * kill -9 of the Temporal dev server while an attempt continues-as-new with follow-ups queued (after every 2
 * follow-ups here: attempts.continueAsNewEvery), then a start on the same SQLite file. The test owns its dev server
 * (test/support/ownTemporal.ts); the stack's API and worker use it.
 *
 * Checked: every follow-up answered 202 before the kill runs once, in order (one process row each, its prompt once in
 * notes.txt), across the runs' switch; one sent while the server is down answers 503 and never runs; the attempt
 * takes follow-ups again afterwards without a restart of the API or the worker.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunningDevServer } from '../../lib/runtime/temporalDevServer';
import { agentConfig, api } from '../support/attemptHelpers';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { startOwnTemporal } from '../support/ownTemporal';

jest.setTimeout(240_000);

let home: string;
let dev: RunningDevServer;
let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-can-temporal-kill-'));
  dev = await startOwnTemporal(home);
  // the stack's API and worker on this dev server (the harness reads the address when it builds them)
  process.env.ARMADA_TEST_TEMPORAL_ADDRESS = dev.address;
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000, continueAsNewEvery: 2 } }) });
  h = api(stack);
}, 180_000);

afterAll(async () => {
  await stack?.close();
  await dev?.stop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const followUps = async (attemptId: string) =>
  (await stack.db.query<{ prompt: string; status: string }>("SELECT prompt, status FROM processes WHERE attempt_id = $1 AND kind = 'follow_up' ORDER BY created_at, id", [attemptId])).rows;
const followUp = (attemptId: string, prompt: string) => h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt });

test('Temporal killed while an attempt continues-as-new with follow-ups queued: each accepted one runs once, in order; one sent meanwhile is a 503 that never runs', async () => {
  const p = await h.project();
  const { attemptId } = await h.start(await h.task(p.id, 'NOOP start'));
  await h.until(attemptId, ['completed'], 60_000);
  const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
  const firstRun = (await handle.describe()).runId;

  const accepted = ['FOLLOWUP 1', 'FOLLOWUP 2', 'FOLLOWUP 3', 'FOLLOWUP 4', 'FOLLOWUP 5'];
  for (const prompt of accepted) expect((await followUp(attemptId, prompt)).statusCode).toBe(202);
  // the kill as the run switches: its second follow-up has ended, the rest are queued in it
  await eventually(async () => (await followUps(attemptId)).filter((f) => f.status === 'completed').length >= 2, 60_000, 10);
  process.kill(dev.server().pid as number, 'SIGKILL');
  await dev.server().exited;
  const meanwhile = await followUp(attemptId, 'FOLLOWUP sent while Temporal is down');
  expect(meanwhile.statusCode).toBe(503);
  expect(meanwhile.json().error.code).toBe('SERVICE_UNAVAILABLE');
  await new Promise((r) => setTimeout(r, 3000));
  await dev.restart();

  await eventually(async () => {
    const list = await followUps(attemptId);
    return list.length === accepted.length && list.every((f) => f.status === 'completed');
  }, 120_000, 200);
  // served again: one more follow-up runs
  const after = await eventually(async () => ((await followUp(attemptId, 'FOLLOWUP 6')).statusCode === 202 ? true : undefined), 60_000, 500);
  expect(after).toBe(true);
  await eventually(async () => (await followUps(attemptId)).length === accepted.length + 1 && (await followUps(attemptId)).every((f) => f.status === 'completed'), 60_000, 200);

  const all = [...accepted, 'FOLLOWUP 6'];
  expect((await followUps(attemptId)).map((f) => f.prompt)).toEqual(all);
  const notes = (await h.inject('GET', `/api/attempts/${attemptId}/diff?format=json&file=notes.txt`)).json().data;
  expect(notes.files[0].changes.map((c: { content: string }) => c.content)).toEqual(all);
  expect((await handle.describe()).runId).not.toBe(firstRun); // it did continue-as-new
  // the attempt's own end is recorded after its last run's process row (ci51c read it a moment too early: running)
  expect((await h.until(attemptId, ['completed', 'failed', 'cancelled'], 60_000)).status).toBe('completed');
});
