/**
 * Accessibility of the board, as a keyboard-only user and a screen-reader user meet it:
 * - every screen (and its dialogs), with real data from the suite's `armada start`, has no `serious` or `critical`
 *   violation of axe-core's WCAG 2.0/2.1/2.2 A and AA rules and its best practices (landmarks, heading order), in a
 *   1,360 px window and, each screen and New project, in a phone's (375 px) too; no rule is turned off;
 * - Tab reaches each control of a screen with its focus ring drawn (an outline 2 px or wider) and in view;
 * - dialogs keep Tab inside and give focus back to what opened them, or to the screen when that is gone;
 * - one flow end to end with the keyboard alone (page.keyboard): create a task, open it, start an attempt, close the
 *   dialog, back to the board, move the card to another column;
 * - Projects fits an 800-px window: its table does not scroll inside its box (it did between ~720 and ~860 px).
 */
import AxeBuilder from '@axe-core/playwright';
import type { Locator, Page } from '@playwright/test';
import { startFakeFlowBuilder } from '../support/fakeFlowBuilder';
import { api, createProject, expect, KEYS, svcApi, test } from './fixtures';

// the not-found addresses are answered 404, which the browser logs as a failed resource
test.use({ allowConsoleErrors: /status of 404/, apiKey: KEYS.alice });

/** The focus ring's colours (styles.css: --focus, 5:1 on white; --focus-on-dark, 7.3:1 on the bar). */
const FOCUS = 'rgb(180, 83, 9)';
const FOCUS_ON_DARK = 'rgb(240, 160, 32)';
/** WCAG 1.4.11 asks 3:1; the board keeps a margin over it (the skip link's ring was 3.1:1 on the bar). */
const RING_CONTRAST = 4;

const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'];

/** No serious or critical axe violation on the page as it is now; each one found is named with its elements. */
async function expectAccessible(page: Page, what: string): Promise<void> {
  const { violations } = await new AxeBuilder({ page }).withTags(TAGS).analyze();
  const bad = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}\n${v.nodes.map((n) => `  ${n.target.join(' ')}: ${n.failureSummary?.replace(/\s+/g, ' ')}`).join('\n')}`);
  expect(bad, `axe violations on ${what}`).toEqual([]);
}

/**
 * expectAccessible in the window's own width, then in a phone's (375 px), then back: a phone lays the screens out
 * otherwise (the navigation on two rows, tables and the board scrolling in their boxes, the board's column strip,
 * filters one under the other), and axe ran at that width on Agents only, for one rule. Every screen is checked so
 * (and New project, the dialog a phone changes most); the other dialogs, at 1,360 px only: 0.7 s each.
 */
async function expectAccessibleWideAndNarrow(page: Page, what: string): Promise<void> {
  await expectAccessible(page, what);
  const wide = page.viewportSize();
  await page.setViewportSize({ width: 375, height: 740 });
  // a box that scrolls at this width takes Tab from the next frame on (useScrolls: a ResizeObserver, then a render)
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await expectAccessible(page, `${what}, at 375 px`);
  if (wide) await page.setViewportSize(wide);
}

/** Presses Tab (at most `max` times) until `target` has focus; fails if it never does. Keyboard only. */
async function tabTo(page: Page, target: Locator, max = 80): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) return;
  }
  throw new Error(`Tab never reached ${target}`);
}

/**
 * What has focus: its tag and accessible text, whether it is inside `scope`, how its focus ring is drawn, and the
 * ring's contrast with what is painted where it is drawn (WCAG 1.4.11), from computed styles: the ring's colour
 * against the background at the middle of each of its four sides (2 px outside the control for a ring drawn outside
 * it, on the control's own background for one drawn inside it), the lowest of the four. The background there is what
 * `elementsFromPoint` finds under that point, the control and what it holds left out (translucent backgrounds
 * composited over what is under them), so a control shown over another box (the skip link over the dark bar) is
 * measured against that box, not against its parent in the DOM.
 */
async function focused(page: Page, scope?: string) {
  return page.evaluate((sel) => {
    const el = document.activeElement as HTMLElement;
    const cs = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    const rgba = (c: string): number[] => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return [0, 0, 0, 0];
      const p = (m[1] as string).split(/[\s,/]+/).filter(Boolean).map(Number);
      return [p[0] ?? 0, p[1] ?? 0, p[2] ?? 0, p[3] ?? 1];
    };
    const luminance = ([r0, g0, b0]: number[]) => {
      const lin = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * lin(r0 as number) + 0.7152 * lin(g0 as number) + 0.0722 * lin(b0 as number);
    };
    const ratio = (a: number[], b: number[]) => {
      const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
      return (hi + 0.05) / (lo + 0.05);
    };
    const width = Number.parseFloat(cs.outlineWidth);
    const offset = Number.parseFloat(cs.outlineOffset);
    const inside = offset + width <= 0;
    // the middle of the ring's line on each side
    const d = offset + width / 2;
    const points = [
      [r.left - d, r.top + r.height / 2],
      [r.right + d, r.top + r.height / 2],
      [r.left + r.width / 2, r.top - d],
      [r.left + r.width / 2, r.bottom + d],
    ].filter(([x, y]) => (x as number) >= 0 && (y as number) >= 0 && (x as number) < window.innerWidth && (y as number) < window.innerHeight);
    const backgroundAt = ([x, y]: number[]) => {
      const layers: number[][] = [];
      for (const under of document.elementsFromPoint(x as number, y as number)) {
        if (under !== el && el.contains(under)) continue;
        if (under === el && !inside) continue;
        const c = rgba(getComputedStyle(under).backgroundColor);
        if ((c[3] as number) === 0) continue;
        layers.push(c);
        if ((c[3] as number) >= 1) break;
      }
      let out = [255, 255, 255];
      for (const [cr, cg, cb, ca] of layers.reverse()) out = [cr, cg, cb].map((v, i) => (v as number) * (ca as number) + (out[i] as number) * (1 - (ca as number)));
      return out;
    };
    const ring = rgba(cs.outlineColor);
    const contrasts = points.map((p) => ratio(ring, backgroundAt(p)));
    return {
      name: `${el.tagName.toLowerCase()} "${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}"`,
      inside: sel ? !!el.closest(sel) : true,
      ring: cs.outlineStyle !== 'none' && width >= 2,
      ringColor: cs.outlineColor,
      ringContrast: contrasts.length ? Math.round(Math.min(...contrasts) * 100) / 100 : null,
      inView: r.bottom > 0 && r.right > 0 && r.top < window.innerHeight && r.left < window.innerWidth,
      isBody: el === document.body,
    };
  }, scope);
}

async function arrange() {
  const stamp = Date.now();
  const project = await createProject(`A11y ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Write the greeting', description: 'TICKS:4', priority: 'high', labels: ['docs'], assignee: 'ann' });
  await api('POST', '/tasks', { projectId: project.id, title: 'Review the greeting', priority: 'low' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await expect.poll(async () => (await api<{ status: string }>('GET', `/attempts/${attemptId}`)).status, { timeout: 60_000, intervals: [250] }).toBe('completed');
  const approval = await api<{ id: string }>('POST', '/approvals', {
    taskAttemptId: attemptId,
    type: 'merge',
    title: `Merge the greeting ${stamp}`,
    approvers: ['alice@example.com'],
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  await api('POST', '/task-templates', { name: `A11y checklist ${Date.now()}`, description: 'two steps', category: 'release', tasks: [{ title: 'Step one', description: '', order: 1 }] });
  return { project, task, attemptId, approval, approve: `Approve Merge the greeting ${stamp}` };
}

test('every screen and its dialogs, with real data: no serious or critical axe violation', async ({ page }) => {
  test.setTimeout(120_000);
  const { project, task, approve } = await arrange();
  const fake = await startFakeFlowBuilder();
  const workflow = `ui-a11y-${Date.now()}`;
  try {
    await svcApi('scheduler', 'POST', '/sources', { name: `ui-a11y-src-${Date.now()}`, source_type: 'flow-builder', url: fake.url });
    await svcApi('scheduler', 'POST', '/workflows', { name: workflow, description: 'nightly report', schedule: '0 3 * * *', timezone: 'UTC', tasks: [{ name: 'say', type: 'script', script: 'echo a11y' }] });
    await svcApi('agents', 'POST', '/tasks', { agent: 'ui-helper', task: 'NOOP summarise the board', priority: 'low' });
    await svcApi('traces', 'POST', '/traces', { messageId: `ui-a11y-${Date.now()}`, instance: 'ui-inst', to: '+15550102000', message: 'hello', status: 'delivered', sentAt: new Date().toISOString() });

    await page.goto('/projects');
    await expect(page.getByRole('link', { name: project.name })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'Projects');
    await page.getByRole('button', { name: 'New project' }).click();
    await expect(page.getByRole('dialog', { name: 'New project' }).getByRole('region', { name: 'Directories' })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'New project');
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: `Delete ${project.name}` }).click();
    await expectAccessible(page, 'Delete project');
    await page.keyboard.press('Escape');

    await page.goto(`/projects/${project.id}`);
    await expect(page.getByRole('article', { name: 'Review the greeting' })).toBeVisible();
    await page.getByLabel('Select Review the greeting').check();
    await expect(page.getByRole('region', { name: 'Selected tasks' })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'the board, a card selected');
    await page.getByRole('button', { name: 'New task' }).click();
    await expectAccessible(page, 'New task');
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Apply template' }).click();
    await expect(page.getByRole('dialog', { name: 'Apply a template' }).getByLabel('Template')).toBeVisible();
    await expectAccessible(page, 'Apply a template');
    await page.keyboard.press('Escape');

    await page.goto(`/tasks/${task.id}`);
    await expect(page.getByRole('log', { name: 'Attempt log' })).toContainText('agent exited with code 0');
    await expect(page.getByRole('region', { name: 'Diff' }).getByRole('navigation', { name: 'Changed files' })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'the task, its attempt, log and diff');
    await page.getByRole('button', { name: 'Start attempt…' }).click();
    await expectAccessible(page, 'Start an attempt');
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Merge…' }).click();
    await expectAccessible(page, 'Merge');
    await page.keyboard.press('Escape');

    await page.goto('/approvals');
    await expect(page.getByRole('button', { name: approve })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'Approvals');
    await page.getByRole('button', { name: approve }).click();
    await expectAccessible(page, 'the answer dialog');
    await page.keyboard.press('Escape');

    await page.goto('/scheduler');
    await page.getByRole('button', { name: `Run ${workflow} now` }).click();
    const exec = page.getByRole('table', { name: 'Executions' }).locator('tr', { hasText: workflow }).first();
    await expect(exec).toBeVisible();
    await expect(page.getByRole('table', { name: 'Sources' })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'Scheduler');
    await exec.getByRole('button', { name: /Logs of execution/ }).click();
    await expect(page.getByRole('dialog', { name: /Logs of/ })).toBeVisible();
    await expectAccessible(page, 'an execution log');
    await page.keyboard.press('Escape');

    await page.goto('/agents');
    await expect(page.getByRole('table', { name: 'Latest tasks' })).toContainText('NOOP summarise the board');
    await expectAccessibleWideAndNarrow(page, 'Agents');
    await page.getByRole('button', { name: 'Assign a task to ui-helper' }).click();
    await expectAccessible(page, 'Assign a task');
    const assign = page.getByRole('dialog', { name: 'Assign a task to ui-helper' });
    await assign.getByLabel('Task').fill('NOOP say hello');
    await assign.getByLabel('Task').press('Enter');
    // the notice (a toast) in its live region
    await expect(page.getByRole('status').filter({ hasText: 'Assigned to ui-helper' })).toBeVisible();
    await expectAccessible(page, 'Agents with a notice');

    await page.goto('/traces');
    await expect(page.getByRole('table', { name: 'Trace list' })).toBeVisible();
    await expect(page.getByTestId('trace-chart')).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'Traces');

    await page.goto('/settings');
    await expect(page.getByRole('heading', { level: 1, name: 'Settings' })).toBeVisible();
    await expect(page.getByRole('status').filter({ hasText: 'Loading…' })).toHaveCount(0);
    await expectAccessibleWideAndNarrow(page, 'Settings');
    await page.getByRole('button', { name: 'New webhook' }).click();
    await expectAccessible(page, 'New webhook');
    await page.keyboard.press('Escape');

    await page.goto('/nope');
    await expect(page.getByRole('heading', { level: 1, name: 'Not found' })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'not found');
    await page.goto(`/tasks/${project.id}`);
    await expect(page.getByRole('heading', { level: 1, name: 'Task not found' })).toBeVisible();
    await expectAccessible(page, 'a task not found');
  } finally {
    await fake.close();
  }
});

test.describe('without a key', () => {
  // the first calls and the event stream are refused (401) until a key is given: what the prompt is for
  test.use({ apiKey: null, allowConsoleErrors: /status of 401|HTTP Authentication failed/ });

  test('the key prompt: no serious or critical axe violation', async ({ page }) => {
    await page.goto('/projects');
    await expect(page.getByRole('dialog', { name: 'API key required' })).toBeVisible();
    await expectAccessibleWideAndNarrow(page, 'the key prompt');
  });
});

test('Tab reaches every control of each screen with its focus ring drawn and in view', async ({ page }) => {
  const { project, task, approve } = await arrange();
  for (const [path, ready] of [
    ['/projects', page.getByRole('link', { name: project.name })],
    [`/projects/${project.id}`, page.getByRole('article', { name: 'Review the greeting' })],
    [`/tasks/${task.id}`, page.getByRole('log', { name: 'Attempt log' }).getByText('agent exited with code 0')],
    ['/approvals', page.getByRole('button', { name: approve })],
    ['/agents', page.getByRole('table', { name: 'Agents' })],
    ['/settings', page.getByRole('heading', { name: 'Webhooks' })],
  ] as const) {
    await page.goto(path);
    await expect(ready).toBeVisible();
    const seen: string[] = [];
    let lowest = { contrast: Number.POSITIVE_INFINITY, on: '' };
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const f = await focused(page);
      // past the last control the browser's own UI takes focus: the page has none (<body>)
      if (f.isBody) break;
      expect.soft(f.ring, `${path}: the focus ring of ${f.name}`).toBe(true);
      // 4:1 or more against what is painted where it is drawn (WCAG 1.4.11 asks 3:1): dark amber on the light page,
      // light amber on the dark bar and inside the log (the light one was used everywhere: 2.1:1 on white; the skip
      // link had the dark one over the bar, 3.1:1; the log's light ring was drawn outside it, on the page, 2.1:1)
      expect.soft([FOCUS, FOCUS_ON_DARK], `${path}: the focus ring's colour on ${f.name}`).toContain(f.ringColor);
      expect.soft(f.ringContrast, `${path}: the focus ring's contrast on ${f.name}`).toBeGreaterThanOrEqual(RING_CONTRAST);
      if (f.ringContrast !== null && f.ringContrast < lowest.contrast) lowest = { contrast: f.ringContrast, on: f.name };
      expect.soft(f.inView, `${path}: ${f.name} in view when focused`).toBe(true);
      seen.push(f.name);
    }
    process.stdout.write(`ui: ${path}: the focus ring's lowest contrast, ${lowest.contrast}:1 on ${lowest.on}\n`);
    expect(seen.length, `${path}: controls Tab reached`).toBeGreaterThan(3);
    expect(seen[0], `${path}: the first stop`).toBe('a "Skip to content"');
  }
});

test('the live log is no live region: a polite status says how many lines came, at most every 5 s, and when the run ended', async ({ page }) => {
  test.setTimeout(90_000);
  const project = await createProject(`A11y live log ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Tick for a while', description: 'TICKS:32' });
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByText(/^No attempts yet\./)).toBeVisible();
  // every text the status takes, with when (the page's clock)
  await page.evaluate(() => {
    const w = window as unknown as { said: { text: string; at: number }[] };
    w.said = [];
    new MutationObserver(() => {
      const el = document.querySelector('[role="status"][aria-label="Log updates"]');
      const text = el?.textContent ?? '';
      if (text && text !== w.said.at(-1)?.text) w.said.push({ text, at: performance.now() });
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await api('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });

  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText('tick 1 at', { timeout: 30_000 });
  // a log is a polite live region by default: each row the view adds (four a second here) would be read out
  await expect(log).toHaveAttribute('aria-live', 'off');
  const status = page.getByRole('status', { name: 'Log updates' });
  await expect(status).toHaveText(/^\d+ new log lines?\.$/, { timeout: 15_000 });
  await expectAccessible(page, 'the task, its log live');
  await expect(status).toHaveText(/The run ended: \d+ log lines\.$/, { timeout: 30_000 });

  const said = await page.evaluate(() => (window as unknown as { said: { text: string; at: number }[] }).said);
  const lines = Number(/(\d+) log lines\.$/.exec(said.at(-1)?.text ?? '')?.[1]);
  expect(lines).toBeGreaterThan(32);
  // the counts said add up to no more than the lines there are, and one was said at most every 5 s (the end at once)
  const counts = said.map((s) => Number(/^(\d+) new log lines?/.exec(s.text)?.[1] ?? 0));
  expect(counts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(lines);
  for (let i = 1; i < said.length - 1; i++) expect((said[i]?.at as number) - (said[i - 1]?.at as number)).toBeGreaterThanOrEqual(4_900);
  expect(said.length, said.map((s) => s.text).join(' | ')).toBeLessThan(lines / 5);
});

test('a dialog keeps Tab inside and gives focus back to its opener, or to the screen when the opener is gone', async ({ page }) => {
  const project = await createProject(`A11y dialogs ${Date.now()}`);
  await api('POST', '/tasks', { projectId: project.id, title: 'Keep me' });
  await api('POST', '/tasks', { projectId: project.id, title: 'Delete me' });
  await page.goto(`/projects/${project.id}`);
  await expect(page.getByRole('article', { name: 'Delete me' })).toBeVisible();

  // New task: Tab and Shift+Tab go round inside; Escape gives focus back to New task
  const newTask = page.getByRole('button', { name: 'New task' });
  await tabTo(page, newTask);
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'New task' });
  await expect(dialog.getByLabel('Title')).toBeFocused();
  for (let i = 0; i < 15; i++) {
    await page.keyboard.press('Tab');
    expect((await focused(page, 'dialog')).inside, `Tab ${i + 1} stays in the dialog`).toBe(true);
  }
  for (let i = 0; i < 15; i++) {
    await page.keyboard.press('Shift+Tab');
    expect((await focused(page, 'dialog')).inside, `Shift+Tab ${i + 1} stays in the dialog`).toBe(true);
  }
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(newTask).toBeFocused();

  // a bulk delete: the bar whose Delete opened the dialog goes with the selection, so focus goes to the screen
  // (it fell to <body>, and the next Tab started over at the top of the page)
  await tabTo(page, page.getByLabel('Select Delete me'));
  await page.keyboard.press('Space');
  const bulkDelete = page.getByRole('region', { name: 'Selected tasks' }).getByRole('button', { name: 'Delete' });
  await tabTo(page, bulkDelete);
  await page.keyboard.press('Enter');
  const confirm = page.getByRole('dialog', { name: 'Delete tasks' });
  await expect(confirm.getByRole('button', { name: 'Delete' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(confirm).toBeHidden();
  await expect(page.getByRole('article', { name: 'Delete me' })).toHaveCount(0);
  await expect(page.locator('#main')).toBeFocused();
  await page.keyboard.press('Tab');
  expect((await focused(page, '#main')).inside, 'the next Tab is inside the screen').toBe(true);

  // a dialog its screen renders only while open (Assign a task) gives focus back too when it goes
  await page.goto('/agents');
  const assign = page.getByRole('button', { name: 'Assign a task to ui-helper' });
  await tabTo(page, assign);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('dialog', { name: 'Assign a task to ui-helper' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog', { name: 'Assign a task to ui-helper' })).toBeHidden();
  await expect(assign).toBeFocused();
});

test('keyboard only: create a task, open it, start an attempt, close the dialog, move the card on the board', async ({ page }) => {
  const project = await createProject(`A11y keyboard ${Date.now()}`);
  await page.goto(`/projects/${project.id}`);
  await expect(page.getByTestId('board')).toBeVisible();
  const title = `Keyboard task ${Date.now()}`;

  // create: New task, type, Enter; focus comes back to New task
  const newTask = page.getByRole('button', { name: 'New task' });
  await tabTo(page, newTask);
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'New task' });
  await expect(dialog.getByLabel('Title')).toBeFocused();
  await page.keyboard.type(title);
  await page.keyboard.press('Tab');
  await expect(dialog.getByLabel('Description')).toBeFocused();
  await page.keyboard.type('TICKS:2');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await expect(dialog).toBeHidden();
  await expect(newTask).toBeFocused();
  const card = page.locator('[data-column="todo"]').getByRole('article', { name: title });
  await expect(card).toBeVisible();

  // open it: Tab to its title's link, Enter
  await tabTo(page, card.getByRole('link', { name: title }));
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { level: 1, name: title })).toBeVisible();

  // start an attempt: the dialog opens on the profile; typing picks one, Enter starts; focus back on its opener
  const startButton = page.getByRole('button', { name: 'Start attempt…' });
  await tabTo(page, startButton);
  await page.keyboard.press('Enter');
  const start = page.getByRole('dialog', { name: 'Start an attempt' });
  await expect(start.getByLabel('Agent profile')).toBeFocused();
  await page.keyboard.type('scripted');
  await expect(start.getByLabel('Agent profile')).toHaveValue('scripted');
  await page.keyboard.press('Enter');
  await expect(start).toBeHidden();
  await expect(startButton).toBeFocused();
  await expect(page.getByRole('log', { name: 'Attempt log' })).toContainText('agent exited with code 0', { timeout: 30_000 });

  // a dialog opened and closed with Escape (Merge…): nothing merged, focus back on Merge…
  const mergeButton = page.getByRole('button', { name: 'Merge…' });
  await tabTo(page, mergeButton);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('dialog', { name: /Merge/ })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('dialog', { name: /Merge/ })).toBeHidden();
  await expect(mergeButton).toBeFocused();

  // back to the board by its breadcrumb; the card is in review; its status select and Move take it to Done
  await tabTo(page, page.getByRole('link', { name: project.name }));
  await page.keyboard.press('Enter');
  const inReview = page.locator('[data-column="in-review"]').getByRole('article', { name: title });
  await expect(inReview).toBeVisible();
  await tabTo(page, inReview.getByLabel(`Status of ${title}`));
  await page.keyboard.press('ArrowDown');
  await expect(inReview.getByLabel(`Status of ${title}`)).toHaveValue('completed');
  await page.keyboard.press('Tab');
  await expect(inReview.getByRole('button', { name: `Move ${title} to Done` })).toBeFocused();
  await page.keyboard.press('Enter');
  const done = page.locator('[data-column="done"]').getByRole('article', { name: title });
  await expect(done.getByLabel(`Status of ${title}`)).toBeFocused();
  // said to a screen reader: the card left the column where it was
  await expect(page.getByRole('status', { name: 'Moves' })).toHaveText(`${title}: moved to Done.`);
  const tasks = await api<{ title: string; status: string }[]>('GET', `/projects/${project.id}/tasks`);
  expect(tasks.find((t) => t.title === title)?.status).toBe('completed');
});

test('Projects in an 800-px window: the table fits its box (it scrolled sideways between ~720 and ~860 px)', async ({ page }) => {
  const project = await createProject(`A11y fit ${Date.now()} payments-and-billing-service`);
  await api('POST', '/tasks', { projectId: project.id, title: 'one' });
  await page.setViewportSize({ width: 800, height: 800 });
  await page.goto('/projects');
  const table = page.getByRole('table', { name: 'Projects' });
  await expect(table.getByRole('link', { name: project.name })).toBeVisible();
  const box = page.locator('.table-scroll').filter({ has: table });
  for (const width of [720, 760, 800, 860]) {
    await page.setViewportSize({ width, height: 800 });
    await expect.poll(() => box.evaluate((el) => el.scrollWidth - el.clientWidth), { message: `${width} px` }).toBeLessThanOrEqual(0);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), `${width} px: the page`).toBeLessThanOrEqual(0);
    await expect(page.getByRole('button', { name: `Delete ${project.name}` })).toBeInViewport({ ratio: 1 });
  }
  // the stats are under the name there, each a label and its value
  await expect(page.getByRole('list', { name: `Task stats of ${project.name}` })).toContainText('Tasks 1');
});
