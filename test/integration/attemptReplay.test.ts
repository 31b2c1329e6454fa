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

/**
 * Every patch the workflow code asks, from its source: `patched(…)`, `deprecatePatch(…)` and the input-versioned
 * `inEffect(input, …, since)` of attemptWorkflow and workflowRunWorkflow (a patch in effect from the run's `paths`
 * without a marker; `since` defaults to 2 in attemptWorkflow), with ids given as literals or as constants of workflows/.
 */
function patchesAsked(): { patch: string; since: number | null }[] {
  const wfDir = path.join(__dirname, '..', '..', 'workflows');
  const sources = fs.readdirSync(wfDir).filter((f) => f.endsWith('.ts')).map((f) => fs.readFileSync(path.join(wfDir, f), 'utf8'));
  const constants = new Map<string, string>();
  for (const src of sources) for (const m of src.matchAll(/const ([A-Z][A-Z0-9_]*) = '([^']+)'/g)) constants.set(m[1] as string, m[2] as string);
  const id = (arg: string): string => (arg.startsWith("'") ? arg.slice(1, -1) : (constants.get(arg) ?? `unresolved ${arg}`));
  const asked = new Map<string, number | null>();
  for (const src of sources) {
    const code = src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, ''); // comments name patches too
    for (const m of code.matchAll(/\b(?:patched|deprecatePatch)\(\s*('[^']+'|[A-Z][A-Z0-9_]*)\s*\)/g)) if (!asked.has(id(m[1] as string))) asked.set(id(m[1] as string), null);
    for (const m of code.matchAll(/\binEffect\(\s*\w+,\s*('[^']+'|[A-Z][A-Z0-9_]*)\s*(?:,\s*(\d+)\s*)?\)/g)) asked.set(id(m[1] as string), m[2] ? Number(m[2]) : 2);
  }
  return [...asked].map(([patch, since]) => ({ patch, since })).sort((a, b) => a.patch.localeCompare(b.patch));
}

describe('what the recorded histories cover', () => {
  let summaries: { file: string; workflowType: string; patches: string[]; paths: number | null }[];
  beforeAll(() => {
    const out = execFileSync(process.execPath, [path.join(__dirname, '..', 'support', 'historySummary.js'), ...files().map((f) => path.join(dir, f))], { encoding: 'utf8', timeout: 60_000 });
    summaries = JSON.parse(out.trim().split('\n').at(-1) as string);
  });

  // Each patch with its workflow type and, for an input-versioned one, the paths it is in effect from without a marker.
  const covered: [workflowType: string, patch: string, since: number | null][] = [
    ['agentWorkflow', 'agent-task-child-workflow', null],
    ['webhookDeliveryWorkflow', 'webhook-gave-up-fails', null],
    ['webhookDeliveryWorkflow', 'webhook-old-retry-policy-continues', null],
    ['followUpDraftWorkflow', 'follow-up-waits-for-row', null],
    ['followUpQueueWorkflow', 'follow-up-waits-for-row', null],
    ['cloneProjectWorkflow', 'project-clone-waits-for-row', null],
    ['approvalWorkflow', 'approval-waits-for-row', null],
    ['attemptWorkflow', 'attempt-gone-is-cancelled', null],
    ['attemptWorkflow', 'cancel-while-preparing-recorded', null],
    ['attemptWorkflow', 'search-attributes-v1', 2],
    ['attemptWorkflow', 'continue-as-new-keeps-messages', 2],
    ['attemptWorkflow', 'cleanup-deleted-attempt', 2],
    ['attemptWorkflow', 'lean-attempt-v1', 2],
    ['attemptWorkflow', 'agent-run-records-outcome', 3],
    ['attemptWorkflow', 'follow-up-resumes-in-one', 3],
    ['workflowRunWorkflow', 'lean-run', 2],
    ['workflowRunWorkflow', 'lean-run-v2', 2],
    ['workflowRunWorkflow', 'local-start', 3],
  ];

  test('every patch the workflow code asks is in the list below, with the paths it is in effect from', () => {
    // a new patch: record a history of a run from before it and one from after it, then list it here
    const listed = new Map(covered.map(([, patch, since]) => [patch, since]));
    expect([...listed].map(([patch, since]) => ({ patch, since })).sort((a, b) => a.patch.localeCompare(b.patch))).toEqual(patchesAsked());
  });

  // A patch's histories from before it (a run started by the older code, still running when the worker is upgraded:
  // no marker, and for an input-versioned patch paths below its `since`) and from after it (the marker, or the paths):
  // the replay above proves both take their own path in today's code.
  test.each(covered)('%s has histories from before and after %s', (workflowType, patch, since) => {
    const inEffect = (s: (typeof summaries)[number]) => s.patches.includes(patch) || (since !== null && (s.paths ?? 0) >= since);
    const ofType = summaries.filter((s) => s.workflowType === workflowType);
    expect(ofType.filter((s) => !inEffect(s)).map((s) => s.file)).not.toEqual([]);
    expect(ofType.filter(inEffect).map((s) => s.file)).not.toEqual([]);
  });

  test('every workflow type the worker runs has a recorded history', () => {
    // a new workflow type: record a history of it too (recordHistory, or recordCompletedHistory for a random id, in
    // the test that runs it; docs/operations.md, "Upgrades and workflow versioning")
    const recorded = new Set(summaries.map((s) => s.workflowType));
    expect(Object.keys(workflows).filter((name) => !recorded.has(name))).toEqual([]);
  });
});
