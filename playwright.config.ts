/**
 * Browser tests of the web board (test/ui/*.spec.ts), run by `npm test` through test/ui/browser.test.ts. They drive
 * Debian's `chromium` package (provisioned by the pretest step; Playwright never downloads a browser) against one
 * real `armada start` per run (test/ui/globalSetup.ts).
 */
import { defineConfig } from '@playwright/test';

const { findTool } = require('./scripts/test-tools') as { findTool(command: string): string | undefined };

export default defineConfig({
  testDir: 'test/ui',
  testMatch: '*.spec.ts',
  globalSetup: './test/ui/globalSetup.ts',
  // one suite, one browser at a time: the machine has 2 cores shared with the rest of the tests. Session 56 tried two
  // (the longest specs first, reconnect and performance after, alone): 4.9 → 4.0 min on an idle machine and 318 → 260 s
  // in CI, but the quiet phase was no shorter (its CPU was 95-99 % busy either way) and two specs side by side see each
  // other's projects come and go in the global event stream (a project list's read of one deleted meanwhile: a 404)
  workers: 1,
  fullyParallel: false,
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
