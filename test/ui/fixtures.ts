/**
 * What every browser test shares: the suite's address and keys (from globalSetup), an API client for arranging
 * and checking state, a page that already holds the key (sessionStorage, as after the key prompt), and a check that
 * the page logged no console error and threw nothing (a test that expects some matches them with allowConsoleErrors).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test as base, expect, type Locator, type Page } from '@playwright/test';

export { expect };

export const BASE_URL = process.env.ARMADA_UI_BASE_URL as string;
/** A directory the suite's filesystem policy allows (test/ui/globalSetup.ts). */
export const BROWSE_ROOT = process.env.ARMADA_UI_BROWSE_ROOT as string;
export const KEYS = {
  task: process.env.ARMADA_UI_TASK_KEY as string,
  alice: process.env.ARMADA_UI_ALICE_KEY as string,
  bob: process.env.ARMADA_UI_BOB_KEY as string,
};

/** A task service call with a key (the service key by default); resolves with the envelope's data, throws on error. */
export async function api<T = Record<string, unknown>>(method: string, urlPath: string, body?: unknown, key = KEYS.task): Promise<T> {
  const res = await fetch(`${BASE_URL}/api${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as { data?: T }) : {};
  if (!res.ok) throw new Error(`${method} /api${urlPath} answered ${res.status}: ${text}`);
  return json.data as T;
}

/** Where the tests' repositories go unless a test says otherwise: in the run's home, removed with it (globalSetup.ts). */
export const REPOS = process.env.ARMADA_UI_REPOS as string;

/** A git repository with one commit in a new directory under `parent` (default: REPOS). */
export function makeRepo(name = 'repo', parent = REPOS): string {
  const dir = fs.mkdtempSync(path.join(parent, `armada-ui-${name}-`));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'README.md'), `# ${name}\n`);
  git('add', '.');
  git('-c', 'user.name=UI Test', '-c', 'user.email=ui@example.com', 'commit', '-q', '-m', 'initial');
  return dir;
}

export async function createProject(name: string): Promise<{ id: string; name: string; repoPath: string }> {
  const repoPath = makeRepo(name.toLowerCase().replace(/[^a-z0-9]+/g, '-'));
  const p = await api<{ id: string; name: string }>('POST', '/projects', { name, repository: { url: repoPath } });
  return { ...p, repoPath };
}

/**
 * Where each line the text of `locator` takes on the screen starts, in px from the element's left edge, top to bottom:
 * one entry for a line that fits, more for one that wraps; a hanging indent starts the second and later further right.
 */
export function lineStarts(locator: Locator): Promise<number[]> {
  return locator.evaluate((el) => {
    const rects: DOMRect[] = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      rects.push(...[...range.getClientRects()].filter((r) => r.width > 0));
    }
    // the text's boxes line by line: a box more than half its height below the line's first starts the next line
    const lines: { top: number; left: number }[] = [];
    for (const r of rects.sort((a, b) => a.top - b.top)) {
      const line = lines.at(-1);
      if (line && r.top < line.top + r.height / 2) line.left = Math.min(line.left, r.left);
      else lines.push({ top: r.top, left: r.left });
    }
    const left = el.getBoundingClientRect().left;
    return lines.map((l) => Math.round(l.left - left));
  });
}

/** The border colour of a field with an error (styles.css: --danger on [aria-invalid="true"]). */
/**
 * Holds back the answers to requests matching `url`: each request reaches the server at once, and its answer reaches
 * the page only after the returned function is called (what a slow network does to the answer, not to the request).
 */
export async function holdAnswers(page: Page, url: string | RegExp): Promise<() => void> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(url, async (route) => {
    const response = await route.fetch();
    await released;
    // a request the page gave up on meanwhile (a query cancelled and sent again, held the same way) has nothing to
    // answer: Playwright disposed its response ("Fetch response has been disposed": ci55c, titles.spec)
    await route.fulfill({ response }).catch((err: Error) => {
      if (!/disposed/i.test(err.message)) throw err;
    });
  });
  return release;
}

/**
 * Runs the page's clock `speed` times as fast as real time while `during` runs, so that a test waits out the board's
 * own timers in a fraction of their length: a read refused because its service is down is tried twice more after 1 and
 * 2 s, then again every 5 s (web/src/main.tsx, web/src/api/unavailable.ts), and a test that watches a few rounds of
 * that waited ~20 s for them. The page must have Playwright's clock installed before it loaded
 * (`page.clock.install()`: its time then flows at the real pace, and does again after `during`). The page runs the same
 * timers, each once and in the same order; only the idle time between them is skipped, as if the machine had slept.
 */
export async function hurried<T>(page: Page, during: () => Promise<T>, speed = 10): Promise<T> {
  const TICK_MS = 100;
  let on = true;
  const ticking = (async () => {
    while (on) {
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
      // a page closed meanwhile (the test over) has no clock left to move
      if (on) await page.clock.fastForward(TICK_MS * (speed - 1)).catch(() => undefined);
    }
  })();
  try {
    return await during();
  } finally {
    on = false;
    await ticking;
  }
}

/**
 * Records the page's layout shifts (the browser's Layout Instability API: an element already shown that moved between
 * two frames without the user's input) from its first frame on; `layoutShiftsIn` reads them. Call before `goto`.
 */
export async function watchLayoutShifts(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { layoutShifts: { value: number; nodes: Node[] }[] };
    w.layoutShifts = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as unknown as { value: number; hadRecentInput: boolean; sources: { node: Node | null }[] }[]) {
        if (!e.hadRecentInput) w.layoutShifts.push({ value: e.value, nodes: e.sources.flatMap((s) => (s.node ? [s.node] : [])) });
      }
    }).observe({ type: 'layout-shift', buffered: true });
  });
}

/** The layout shifts recorded so far (watchLayoutShifts) that moved something inside the element `selector` names. */
export async function layoutShiftsIn(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => {
    const w = window as unknown as { layoutShifts: { value: number; nodes: Node[] }[] };
    const inside = document.querySelector(sel);
    return w.layoutShifts
      .filter((s) => s.nodes.some((n) => inside?.contains(n)))
      .map((s) => `${s.value.toFixed(4)}: ${s.nodes.map((n) => (n instanceof Element ? n.outerHTML.slice(0, 80) : n.nodeName)).join(' | ')}`);
  }, selector);
}

/**
 * Records how many errors (`role="alert"`) the page shows, each time that number changes, from its first frame on;
 * `alertCountsSeen` reads them. An outage's error that blinked away at each try shows as 1, 0, 1, … Call before `goto`.
 */
export async function watchAlertCounts(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { alertCounts: number[] };
    w.alertCounts = [];
    const look = () => {
      const n = document.querySelectorAll('[role="alert"]').length;
      if (w.alertCounts.at(-1) !== n) w.alertCounts.push(n);
    };
    document.addEventListener('DOMContentLoaded', () => new MutationObserver(look).observe(document.body, { subtree: true, childList: true }));
  });
}

export async function alertCountsSeen(page: Page): Promise<number[]> {
  return page.evaluate(() => (window as unknown as { alertCounts: number[] }).alertCounts);
}

export const ERROR_BORDER = 'rgb(180, 35, 53)';

/** A field shown in its error state: marked invalid for assistive technology, and bordered in red for the eye. */
export async function expectErrorState(field: Locator): Promise<void> {
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  for (const side of ['top', 'right', 'bottom', 'left']) await expect(field).toHaveCSS(`border-${side}-color`, ERROR_BORDER);
}

/** A field shown without an error: neither marked invalid nor bordered in red. */
export async function expectNoErrorState(field: Locator): Promise<void> {
  await expect(field).not.toHaveAttribute('aria-invalid', 'true');
  await expect(field).not.toHaveCSS('border-top-color', ERROR_BORDER);
}

export const test = base.extend<{ apiKey: string | null; allowConsoleErrors: RegExp | null; consoleErrors: string[] }>({
  apiKey: [KEYS.task, { option: true }],
  allowConsoleErrors: [null, { option: true }],
  consoleErrors: [
    async ({ page, allowConsoleErrors }, use) => {
      const errors: string[] = [];
      page.on('console', (msg) => {
        if (msg.type() !== 'error' || allowConsoleErrors?.test(msg.text())) return;
        // Chromium's "Failed to load resource" names no resource in its text: its location is the resource's URL
        const at = msg.location().url;
        errors.push(/^Failed to load resource/.test(msg.text()) && at ? `${msg.text()}: ${at}` : msg.text());
      });
      page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
      await use(errors);
      expect(errors, 'console errors in the page').toEqual([]);
    },
    { auto: true },
  ],
  page: async ({ page, apiKey }, use) => {
    if (apiKey) await page.addInitScript((key) => window.sessionStorage.setItem('armada.apiKey', key), apiKey);
    await use(page);
  },
});

/** A scheduler / agents / traces call through the task service's proxy (/svc/<service>/api/v1…); resolves with the body. */
export async function svcApi<T = Record<string, unknown>>(service: 'scheduler' | 'agents' | 'traces', method: string, urlPath: string, body?: unknown): Promise<T> {
  const res = await fetch(`${BASE_URL}/svc/${service}/api/v1${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${KEYS.task}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} /svc/${service}/api/v1${urlPath} answered ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : {}) as T;
}
