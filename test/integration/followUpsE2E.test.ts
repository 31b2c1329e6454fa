/**
 * END-TO-END follow-ups against the real attempt engine (issue 3): `POST /api/tasks/:id/start` runs attemptWorkflow
 * with a scripted agent. drafts.test.ts covers the same draft workflows against a test-only stand-in of
 * `attempt:<id>` (test/support/attemptStandInWorkflow.ts) that takes the same `followUp` signal.
 *
 * Contract exercised: the attempt workflow `attempt:<attemptId>` takes the signal `followUp` {prompt, draftId?,
 * source?}, queues follow-ups FIFO and runs each as a new agent process with the prompt on stdin.
 * The scripted agent copies its stdin to stdout and to one file per process (named by start time), so the test sees
 * every process and the prompt it got; the first process lingers a few seconds so the attempt is still running.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recordHistory } from '../support/attemptHelpers';
import { createProjectAndTask } from '../support/attempts';
import { eventually, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let outDir: string;

const AGENT_SCRIPT = [
  'first=0; [ -z "$(ls -A "$FOLLOWUP_DIR")" ] && first=1',
  'f="$FOLLOWUP_DIR/$(date +%s%N)-$$.txt"',
  'tee "$f.tmp" && mv "$f.tmp" "$f"',
  '[ "$first" = 1 ] && sleep 4',
  'exit 0',
].join('\n');

beforeAll(async () => {
  outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-followups-'));
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: { agents: { printer: { command: ['sh', '-c', AGENT_SCRIPT], format: 'text', env: { FOLLOWUP_DIR: outDir } } } },
  });
});
afterAll(async () => {
  await stack.close();
  fs.rmSync(outDir, { recursive: true, force: true });
});

/** The stdin of every agent process so far, oldest first. */
function processInputs(): string[] {
  return fs
    .readdirSync(outDir)
    .filter((f) => f.endsWith('.txt'))
    .sort()
    .map((f) => fs.readFileSync(path.join(outDir, f), 'utf8'));
}

async function startAttempt(): Promise<string> {
  for (const f of fs.readdirSync(outDir)) fs.rmSync(path.join(outDir, f));
  const { taskId } = await createProjectAndTask(stack);
  const r = await stack.app('task').inject({ method: 'POST', url: `/api/tasks/${taskId}/start`, payload: { llm: 'printer' } });
  expect(r.statusCode).toBe(200);
  expect(r.json().data.status).toBe('running');
  const attemptId = r.json().data.attemptId as string;
  await eventually(async () => processInputs().length === 1, 20_000);
  return attemptId;
}

describe('follow-ups through the real attempt engine (needs issue 3 merged)', () => {
  test('a follow-up draft with sendAfter 2 s ahead runs as a second agent process with the prompt on stdin, at that time', async () => {
    const attemptId = await startAttempt();
    const sendAfter = Date.now() + 2000;
    const r = await stack.app('task').inject({
      method: 'POST',
      url: `/api/task-attempts/${attemptId}/follow-up-draft`,
      payload: { prompt: 'FOLLOW-UP: add a changelog entry', autoSend: true, sendAfter: new Date(sendAfter).toISOString() },
    });
    expect(r.json().data.status).toBe('scheduled');
    const inputs = await eventually(async () => {
      const i = processInputs();
      return i.length >= 2 ? i : undefined;
    }, 30_000);
    expect(inputs[1]).toContain('FOLLOW-UP: add a changelog entry');
    const secondStarted = Number(fs.readdirSync(outDir).filter((f) => f.endsWith('.txt')).sort()[1]?.split('-')[0]) / 1e6;
    expect(secondStarted).toBeGreaterThanOrEqual(sendAfter);
    await eventually(async () => (await stack.db.query("SELECT 1 FROM follow_up_drafts WHERE id = $1 AND status = 'sent'", [r.json().data.id])).rowCount);
    const workflowId = `follow-up:${r.json().data.id}`;
    expect(await (await stack.temporal.client()).workflow.getHandle(workflowId).result()).toBe('sent');
    await recordHistory(stack, workflowId, 'follow-up-draft-sent-after-wait');
  }, 90_000);

  test('a queue of three prompts with autoExecute runs three follow-up processes in order', async () => {
    const attemptId = await startAttempt();
    const r = await stack.app('task').inject({
      method: 'POST',
      url: `/api/task-attempts/${attemptId}/follow-up-queue`,
      payload: {
        autoExecute: true,
        queue: [
          { prompt: 'STEP-C', order: 3 },
          { prompt: 'STEP-A', order: 1 },
          { prompt: 'STEP-B', order: 2 },
        ],
      },
    });
    expect(r.statusCode).toBe(201);
    const inputs = await eventually(async () => {
      const i = processInputs();
      return i.length >= 4 ? i : undefined;
    }, 60_000);
    expect(inputs.slice(1).map((s) => /STEP-[ABC]/.exec(s)?.[0])).toEqual(['STEP-A', 'STEP-B', 'STEP-C']);
    const workflowId = `follow-up-queue:${r.json().data.id}`;
    expect(await (await stack.temporal.client()).workflow.getHandle(workflowId).result()).toEqual({ sent: 3 });
    await recordHistory(stack, workflowId, 'follow-up-queue-three-sent');
  }, 120_000);
});
