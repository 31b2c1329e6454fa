/**
 * The disk under the Temporal dev server's SQLite file fills up ($ARMADA_HOME/temporal.db of `armada start`, on one disk
 * with the worktrees an agent fills): the server runs and answers, but writes nothing (`database or disk is full`).
 * The test owns its dev server (test/support/ownTemporal.ts) with its file on a small tmpfs it fills to the last byte.
 *
 * Checked: SQLite first writes into free pages its WAL file already has, so some starts are taken on the full disk;
 * the first one the server cannot write answers 503 in the task service's shape within seconds (never a 500, never a
 * hang) and leaves no attempt; reads that need only PostgreSQL go on. Once space is back, every attempt answered 200
 * (one whose agent ran across the full disk, and those taken on it) completes, each agent run once, and new starts
 * run, without a restart of anything.
 */
import fs from 'node:fs';
import path from 'node:path';
import { agentConfig, api } from '../support/attemptHelpers';
import { startTestStack, type TestStack } from '../support/harness';
import { startOwnTemporal } from '../support/ownTemporal';
import { mountSmallDisk, type SmallDisk } from '../support/smallDisk';
import type { RunningDevServer } from '../../lib/runtime/temporalDevServer';

jest.setTimeout(240_000);

let disk: SmallDisk;
let dev: RunningDevServer;
let stack: TestStack;
let h: ReturnType<typeof api>;
let runLog: string;

beforeAll(async () => {
  disk = mountSmallDisk('64m');
  dev = await startOwnTemporal(disk.dir);
  // the stack's API and worker on this dev server (the harness reads the address when it builds them)
  process.env.ARMADA_TEST_TEMPORAL_ADDRESS = dev.address;
  const base = agentConfig();
  runLog = path.join(disk.dir, '..', `${path.basename(disk.dir)}-runs.log`);
  const env = { ARMADA_TEST_RUN_LOG: runLog };
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: {
      ...base,
      agents: {
        scripted: { ...base.agents.scripted, env },
        // works for 6 s, across the full disk
        slow: { command: ['bash', '-c', 'echo "$ARMADA_ATTEMPT_ID" >> "$ARMADA_TEST_RUN_LOG"; sleep 6; echo done > slow.txt'], format: 'text', env },
      },
    },
  });
  h = api(stack);
}, 180_000);

afterAll(async () => {
  disk?.free();
  await stack?.close();
  await dev?.stop();
  disk?.remove();
  if (runLog) fs.rmSync(runLog, { force: true });
});

test("Temporal's disk full: starts it takes run, the first it cannot write answers 503 at once and leaves nothing; once space is back every accepted attempt completes, each agent run once", async () => {
  const p = await h.project();
  const first = await h.start(await h.task(p.id, 'before the disk fills'));
  await h.until(first.attemptId, ['completed'], 60_000);
  const accepted = [first.attemptId, (await h.start(await h.task(p.id, 'across the full disk'), 'slow')).attemptId];

  disk.fill();
  // SQLite writes into the free pages its WAL file already has, so the server takes some starts before it fails
  let refused: { taskId: string; status: number; ms: number; body: Record<string, unknown> } | undefined;
  for (let i = 0; i < 60 && !refused; i++) {
    const taskId = await h.task(p.id, `while the disk is full ${i}`); // PostgreSQL's disk is another
    const t0 = Date.now();
    const r = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    if (r.statusCode === 200) accepted.push(r.json().data.attemptId);
    else refused = { taskId, status: r.statusCode, ms: Date.now() - t0, body: r.json() };
  }
  expect(refused).toMatchObject({
    status: 503,
    body: { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/^The workflow engine is unavailable; try again/) } },
  });
  expect(refused?.ms).toBeLessThan(15_000); // not a hang
  // reads that need only PostgreSQL go on
  expect((await h.inject('GET', `/api/tasks?projectId=${p.id}`)).statusCode).toBe(200);
  await new Promise((r) => setTimeout(r, 8000)); // the slow agent ends while the disk is full
  disk.free();

  for (const id of accepted) expect(await h.until(id, ['completed', 'failed'], 120_000)).toMatchObject({ status: 'completed', error: null });
  const after = await h.start(await h.task(p.id, 'after space is back'));
  expect(await h.until(after.attemptId, ['completed', 'failed'], 120_000)).toMatchObject({ status: 'completed' });
  // the refused start left no attempt; every accepted one's agent ran once
  expect((await stack.db.query('SELECT id FROM attempts WHERE task_id = $1', [refused?.taskId])).rows).toEqual([]);
  const runs = fs.readFileSync(runLog, 'utf8').split('\n').filter(Boolean);
  expect(runs.slice().sort()).toEqual([...accepted, after.attemptId].sort());
});
