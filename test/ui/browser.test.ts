/**
 * `npm test` runs the browser tests: Playwright (playwright.config.ts, test/ui/*.spec.ts) in a child process
 * against one `armada start`, with Debian's chromium. This test passes when they all pass and shows their output
 * when they do not.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { markBrowserTestDone } from '../support/quietTurns';

const ROOT = path.join(__dirname, '..', '..');
jest.setTimeout(15 * 60_000);

test('the browser tests (Playwright, test/ui/*.spec.ts) pass', async () => {
  const cli = path.join(path.dirname(require.resolve('@playwright/test/package.json')), 'cli.js');
  // Playwright refuses to run inside a jest worker (it looks for JEST_WORKER_ID): the child is its own runner
  const env: NodeJS.ProcessEnv = { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1', FORCE_COLOR: '0', CI: '1' };
  delete env.JEST_WORKER_ID;
  const child = spawn(process.execPath, [cli, 'test', '--config', path.join(ROOT, 'playwright.config.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d.toString()));
  child.stderr.on('data', (d) => (output += d.toString()));
  // the contract test of the same quiet phase waits for this (test/support/quietTurns.ts), also after a failure
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve)).finally(markBrowserTestDone);
  // the run's own lines (timings: armada start, the 1,000-task board) are worth seeing in the jest output too
  process.stdout.write(`${output.split('\n').filter((l) => /^ui: |passed|failed|flaky/.test(l.trim())).join('\n')}\n`);
  if (code !== 0) throw new Error(`playwright test exited with ${code}:\n${output.slice(-20_000)}`);
});
