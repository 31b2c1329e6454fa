/**
 * Replays the recorded histories of every workflow type (attemptWorkflow, mergeWorkflow, workflowRunWorkflow, and the
 * others in test/fixtures/histories) against today's workflow bundle, and checks which workflow types and patches
 * the recorded histories cover.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as workflows from '../../workflows';
import { env } from '../support/harness';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const files = () => fs.readdirSync(dir).filter((f) => f.endsWith('.json'));

test('recorded attempt histories replay without nondeterminism', () => {
  const all = files();
  expect(all.length).toBeGreaterThanOrEqual(5);
  // Worker.runReplayHistories runs in a plain Node process: protobufjs's registry breaks inside jest's sandbox
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'support', 'replayHistories.js'), env('ARMADA_WORKFLOW_BUNDLE'), ...all.map((f) => path.join(dir, f))], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const results = JSON.parse(out.trim().split('\n').at(-1) as string) as { workflowId: string; error: string | null }[];
  expect(results).toEqual(all.map((f) => ({ workflowId: f.replace(/\.json$/, ''), error: null })));
});

describe('what the recorded histories cover', () => {
  let summaries: { file: string; workflowType: string; patches: string[] }[];
  beforeAll(() => {
    const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'support', 'historySummary.js'), ...files().map((f) => path.join(dir, f))], { encoding: 'utf8', timeout: 60_000 });
    summaries = JSON.parse(out.trim().split('\n').at(-1) as string);
  });

  // A patch's histories from before it (no marker: a run started by the older code, still running when the worker
  // is upgraded) and from after it (the marker): the replay above proves both take their own path in today's code.
  test.each([
    ['agentWorkflow', 'agent-task-child-workflow'],
    ['webhookDeliveryWorkflow', 'webhook-gave-up-fails'],
    ['webhookDeliveryWorkflow', 'webhook-old-retry-policy-continues'],
    ['followUpDraftWorkflow', 'follow-up-waits-for-row'],
    ['followUpQueueWorkflow', 'follow-up-waits-for-row'],
    ['cloneProjectWorkflow', 'project-clone-waits-for-row'],
    ['approvalWorkflow', 'approval-waits-for-row'],
  ])('%s has histories from before and after %s', (workflowType, patch) => {
    const ofType = summaries.filter((s) => s.workflowType === workflowType);
    expect(ofType.filter((s) => !s.patches.includes(patch)).map((s) => s.file)).not.toEqual([]);
    expect(ofType.filter((s) => s.patches.includes(patch)).map((s) => s.file)).not.toEqual([]);
  });

  test('every workflow type the worker runs has a recorded history', () => {
    // a new workflow type: record a history of it too (recordHistory, or recordCompletedHistory for a random id, in
    // the test that runs it; docs/operations.md, "Upgrades and workflow versioning")
    const recorded = new Set(summaries.map((s) => s.workflowType));
    expect(Object.keys(workflows).filter((name) => !recorded.has(name))).toEqual([]);
  });
});
