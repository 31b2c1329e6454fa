/** The quiet phase's turn-taking (test/support/quietTurns.ts): the contract test waits for the browser test's end. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { browserTestEnded, markBrowserTestDone } from '../support/quietTurns';

const saved = { phase: process.env.ARMADA_TEST_PHASE, tmp: process.env.TMPDIR };
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quiet-turns-'));
  process.env.TMPDIR = dir; // os.tmpdir() follows it, as in a phase (globalSetup sets it)
});
afterEach(() => {
  for (const [k, v] of [['ARMADA_TEST_PHASE', saved.phase], ['TMPDIR', saved.tmp]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('in the quiet phase the wait ends only once the browser test has left its mark', async () => {
  process.env.ARMADA_TEST_PHASE = 'quiet';
  const lines: string[] = [];
  let ended = false;
  const waiting = browserTestEnded((l) => lines.push(l)).then(() => (ended = true));
  await new Promise((r) => setTimeout(r, 1200));
  expect(ended).toBe(false);
  expect(lines).toEqual(['waiting for the browser test to end (the quiet phase runs them one after the other)']);
  markBrowserTestDone();
  await waiting;
  expect(lines[1]).toMatch(/^the browser test ended; waited \d+ s$/);
});

test('outside the quiet phase (one jest run, the rest phase) nothing is waited for', async () => {
  for (const phase of [undefined, 'rest']) {
    if (phase) process.env.ARMADA_TEST_PHASE = phase;
    else delete process.env.ARMADA_TEST_PHASE;
    const lines: string[] = [];
    await browserTestEnded((l) => lines.push(l));
    expect(lines).toEqual([]);
  }
});

test('a mark left before the wait lets it through at once', async () => {
  process.env.ARMADA_TEST_PHASE = 'quiet';
  markBrowserTestDone();
  const lines: string[] = [];
  await browserTestEnded((l) => lines.push(l));
  expect(lines).toEqual([]);
});
