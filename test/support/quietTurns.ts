/**
 * The quiet phase's two CPU-heavy files take turns (docs/testing.md, "Run time"): the browser test leaves a mark in
 * the phase's temp dir when it ends (passed or failed), and the contract test, when it runs in the same phase, starts
 * schemathesis only after that mark. The phase runs on 3 workers, so which files run side by side would otherwise
 * depend on how long each took: in a slow spell of the VM the contract test started beside the browser test, whose
 * 1-1.5 s budgets failed beside it before (session 43).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const { QUIET_PHASE } = require('./testPhases') as { QUIET_PHASE: string[] };

const BROWSER_TEST = 'test/ui/browser.test.ts';
/** The browser test's own timeout (15 min) and a margin: a worker that died without the mark holds no one for ever. */
const WAIT_LIMIT_MS = 16 * 60_000;

const mark = () => path.join(os.tmpdir(), 'armada-quiet-browser-test-done');

export function markBrowserTestDone(): void {
  fs.writeFileSync(mark(), new Date().toISOString());
}

/** Resolves once the browser test of this quiet phase has ended; at once outside the quiet phase. */
export async function browserTestEnded(report: (line: string) => void): Promise<void> {
  if (process.env.ARMADA_TEST_PHASE !== 'quiet' || !QUIET_PHASE.includes(BROWSER_TEST)) return;
  const since = Date.now();
  if (!fs.existsSync(mark())) report('waiting for the browser test to end (the quiet phase runs them one after the other)');
  while (!fs.existsSync(mark())) {
    if (Date.now() - since > WAIT_LIMIT_MS) {
      report(`the browser test left no end mark in ${WAIT_LIMIT_MS / 60_000} minutes: going on`);
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  if (Date.now() - since > 1000) report(`the browser test ended; waited ${((Date.now() - since) / 1000).toFixed(0)} s`);
}
