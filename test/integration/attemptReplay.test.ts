/**
 * Replays the recorded histories of attemptWorkflow / mergeWorkflow / workflowRunWorkflow / approvalWorkflow (and the
 * others in test/fixtures/histories) against today's workflow bundle.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { env } from '../support/harness';

const dir = path.join(__dirname, '..', 'fixtures', 'histories');

test('recorded attempt histories replay without nondeterminism', () => {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  expect(files.length).toBeGreaterThanOrEqual(5);
  // Worker.runReplayHistories runs in a plain Node process: protobufjs's registry breaks inside jest's sandbox
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'support', 'replayHistories.js'), env('ARMADA_WORKFLOW_BUNDLE'), ...files.map((f) => path.join(dir, f))], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const results = JSON.parse(out.trim().split('\n').at(-1) as string) as { workflowId: string; error: string | null }[];
  expect(results).toEqual(files.map((f) => ({ workflowId: f.replace(/\.json$/, ''), error: null })));
});
