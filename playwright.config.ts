/**
 * Browser tests of the web board (test/ui/*.spec.ts), run by `npm test` through test/ui/browser.test.ts. They drive
 * Debian's `chromium` package (provisioned by the pretest step; Playwright never downloads a browser) against one
 * real `armada start` per run (test/ui/globalSetup.ts).
 */
import { defineConfig } from '@playwright/test';

/** The longest spec files, started first (projects, below). */
const LONG = ['task.spec.ts', 'a11y.spec.ts'];
/** The spec files that run after the others, one at a time (projects, below). */
const ALONE = ['reconnect.spec.ts', 'performance.spec.ts'];

const { findTool } = require('./scripts/test-tools') as { findTool(command: string): string | undefined };

export default defineConfig({
  testDir: 'test/ui',
  testMatch: '*.spec.ts',
  globalSetup: './test/ui/globalSetup.ts',
  // Two browsers at a time, each running its own spec files (one file's tests in order, on one worker): alone, the
  // run keeps ~0.65 of a core busy and mostly waits on the suite's answers (session 56: 119 tests, 4.9 min on one
  // worker). The files that would disturb the others or be disturbed by them run afterwards, one at a time (the
  // project `alone` below).
  workers: Number(process.env.ARMADA_UI_WORKERS || 2),
  fullyParallel: false,
  projects: [
    // the two longest files first, one on each worker, so that no long file starts last and runs on while the other
    // worker has nothing left (session 56: task.spec, started last in name order, ran on for 47 s alone)
    { name: 'long', testMatch: LONG },
    { name: 'shared', testIgnore: [...LONG, ...ALONE] },
    // reconnect.spec freezes the suite's PostgreSQL (every other test would see the outage); performance.spec
    // measures the 1,000-task board against its 1.5 s budget (any other browser would count in it)
    { name: 'alone', testMatch: ALONE, dependencies: ['long', 'shared'], workers: 1 },
  ],
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: process.env.ARMADA_UI_OUTPUT_DIR ?? 'test-results/ui',
  use: {
    baseURL: process.env.ARMADA_UI_BASE_URL,
    browserName: 'chromium',
    viewport: { width: 1360, height: 860 },
    launchOptions: {
      executablePath: findTool('chromium') ?? '/usr/bin/chromium',
      // root in a container: Chromium's sandbox needs user namespaces it may not get
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    },
    trace: 'off',
    screenshot: 'only-on-failure',
  },
});
