/**
 * A phone-wide window (375 px): the navigation wraps inside its dark bar, every link readable there, and no screen
 * scrolls sideways (wide content such as tables and the board's columns scrolls inside its own box).
 */
import type { Locator } from '@playwright/test';
import { api, createProject, expect, KEYS, makeRepo, svcApi, test } from './fixtures';
import { screenshot } from './screenshot';

test.use({ viewport: { width: 375, height: 740 } });
// every screen is checked and reported, not only the first that overflows
const softly = expect.configure({ soft: true });

test('at 375 px the nav wraps inside its bar and no screen scrolls sideways', async ({ page }) => {
  test.setTimeout(120_000);
  const project = await createProject('Narrow Project');
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Narrow task', description: 'seen on a phone', labels: ['ui'] });
  const screens: [string, string][] = [
    ['/projects', 'Projects'],
    [`/projects/${project.id}`, 'Narrow Project'],
    [`/tasks/${task.id}`, 'Narrow task'],
    ['/approvals', 'Approvals'],
    ['/scheduler', 'Scheduler'],
    ['/agents', 'Agents'],
    ['/traces', 'Traces'],
    ['/settings', 'Settings'],
  ];
  for (const [url, heading] of screens) {
    await page.goto(url);
    await expect(page.getByRole('heading', { name: heading, level: 1 })).toBeVisible();
    // every nav link lies inside the dark bar and inside the window
    const bar = await page.locator('.topbar').boundingBox();
    expect(bar).not.toBeNull();
    for (const name of ['Projects', 'Approvals', 'Scheduler', 'Agents', 'Traces', 'Settings']) {
      const link = await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).boundingBox();
      expect(link, `${name} on ${url}`).not.toBeNull();
      if (!link || !bar) continue;
      expect(link.x + link.width, `${name} link's right edge on ${url}`).toBeLessThanOrEqual(375);
      expect(link.y, `${name} link inside the bar on ${url}`).toBeGreaterThanOrEqual(bar.y);
      expect(link.y + link.height, `${name} link inside the bar on ${url}`).toBeLessThanOrEqual(bar.y + bar.height);
      expect(link.x + link.width, `${name} link inside the bar on ${url}`).toBeLessThanOrEqual(bar.x + bar.width);
    }
    // the stored key, masked, stays on one line ("ui-t…" ended a line and "89" began the next)
    if (url === '/settings') expect(await page.getByTestId('stored-key').evaluate((el) => el.getClientRects().length)).toBe(1);
    // the page itself does not scroll sideways (polled: lazy screens settle)
    await softly
      .poll(() => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), { message: `sideways overflow on ${url}` })
      .toBeLessThanOrEqual(0);
  }
  await page.goto(`/projects/${project.id}`);
  await expect(page.getByRole('heading', { name: 'Narrow Project', level: 1 })).toBeVisible();
  await screenshot(page, 'narrow-board');
  await page.goto('/projects');
  await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
  await screenshot(page, 'narrow-projects');
});

test('at 375 px a long name without a space, in any script, stays inside the window and inside its dialog', async ({ page }) => {
  const name = `Ünïcødé-プロジェクト-${'x'.repeat(170)}`;
  const title = `Überlange-Aufgabe-${'y'.repeat(280)}`;
  const project = await api<{ id: string; name: string }>('POST', '/projects', { name, repository: { url: makeRepo('long-name') } });
  const label = `label-${'l'.repeat(54)}`;
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title, labels: ['ünïcødé', label] });
  const overflow = (selector: string) => page.locator(selector).first().evaluate((el) => el.scrollWidth - el.clientWidth);

  await page.goto(`/projects/${project.id}`);
  await expect(page.getByRole('heading', { name, level: 1 })).toBeVisible();
  await expect(page.getByRole('article', { name: title })).toBeVisible();
  await softly.poll(() => overflow('html'), { message: 'sideways overflow on the board' }).toBeLessThanOrEqual(0);
  // a 60-character label stays inside its card (cut short, whole in its tooltip): it ran out of the card
  await softly.poll(() => overflow('article.card'), { message: 'the label runs out of its card' }).toBeLessThanOrEqual(0);
  await expect(page.getByRole('article', { name: title }).getByText(label)).toHaveAttribute('title', label);
  await screenshot(page, 'narrow-long-names', { fullPage: false });
  // and wraps on the task's page (it made the page scroll sideways)
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('heading', { name: title, level: 1 })).toBeVisible();
  await softly.poll(() => overflow('html'), { message: 'sideways overflow on the task page' }).toBeLessThanOrEqual(0);

  await page.goto('/projects');
  await page.getByRole('button', { name: `Delete ${name}` }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete project' });
  await expect(confirm).toBeVisible();
  await softly.poll(() => overflow('dialog[open]'), { message: "the delete dialog's text runs out of it" }).toBeLessThanOrEqual(0);
  await softly.poll(() => overflow('html'), { message: 'sideways overflow with the delete dialog' }).toBeLessThanOrEqual(0);
  await screenshot(page, 'narrow-long-name-dialog', { fullPage: false });
  await page.keyboard.press('Escape');
});

/**
 * Scrolls the page (the window only, never the table's own box) so that `locator` is in the window's height: rows
 * other specs add on the shared stack can push it below the fold (a11y.spec.ts's scheduler rows did in ci50a), and
 * what these checks are about is the right edge of the table's box, which a scroll of the box would hide.
 */
async function scrollWindowTo(locator: Locator): Promise<void> {
  await locator.evaluate((el) => window.scrollTo(window.scrollX, Math.max(0, el.getBoundingClientRect().top + window.scrollY - window.innerHeight / 3)));
}

/** How far the table box holding `row` scrolls sideways (0: it fits). */
const boxOverflow = (row: Locator) => row.locator('xpath=ancestor::div[contains(@class, "table-scroll")][1]').evaluate((box) => box.scrollWidth - box.clientWidth);

/**
 * A stacked row (RowFacts): its main text, then the facts named `facts` under it, in the window and left of its
 * `button`, and its table's box does not scroll sideways (the columns scrolled under the pinned buttons).
 */
async function expectStacked(row: Locator, main: string, facts: string, button?: string): Promise<void> {
  await scrollWindowTo(row);
  await expect(row.getByText(main, { exact: true }).first()).toBeInViewport({ ratio: 1 });
  const list = row.getByRole('list', { name: facts });
  await expect(list).toBeInViewport({ ratio: 1 });
  if (button) {
    const [f, b] = [await list.boundingBox(), await row.getByRole('button', { name: button }).boundingBox()];
    expect((f?.x ?? 0) + (f?.width ?? 0), `${facts}: left of ${button}`).toBeLessThanOrEqual(b?.x ?? 0);
  }
  expect(await boxOverflow(row), `${facts}: its table's box scrolls sideways`).toBeLessThanOrEqual(0);
}

test("at 375 px the rows' buttons stay in view at the right edge of their table; the Scheduler's, Agents' and Settings' rows stack under their main text, a cron expression on one line", async ({ page }) => {
  const name = `Buttons-in-view-${'n'.repeat(80)}`;
  await api('POST', '/projects', { name, repository: { url: makeRepo('buttons-in-view') } });
  await svcApi('scheduler', 'POST', '/workflows', {
    name: 'ui-narrow-nightly',
    description: 'a description long enough to take several lines of a narrow column',
    schedule: '0 3 * * *',
    timezone: 'Europe/Paris',
    tasks: [{ name: 'say', type: 'script', script: 'echo narrow' }],
  });
  await page.goto('/projects');
  // the table is wider than the window and scrolls in its box; the row's buttons were past its right edge
  for (const button of [`Edit ${name}`, `Delete ${name}`]) {
    await scrollWindowTo(page.getByRole('button', { name: button }));
    await expect(page.getByRole('button', { name: button })).toBeInViewport({ ratio: 1 });
  }
  await page.goto('/scheduler');
  for (const button of ['Run ui-narrow-nightly now', 'Pause ui-narrow-nightly']) {
    await scrollWindowTo(page.getByRole('button', { name: button }));
    await expect(page.getByRole('button', { name: button })).toBeInViewport({ ratio: 1 });
  }
  // each row reads top to bottom: the name, and under it what the other columns said, left of the row's button
  const schedule = page.getByRole('table', { name: 'Schedules' }).locator('[data-schedule="ui-narrow-nightly"]');
  await expectStacked(page.getByRole('table', { name: 'Workflows' }).locator('[data-workflow="ui-narrow-nightly"]'), 'ui-narrow-nightly', 'About ui-narrow-nightly', 'Run ui-narrow-nightly now');
  await expectStacked(schedule, 'ui-narrow-nightly', 'About the schedule of ui-narrow-nightly', 'Pause ui-narrow-nightly');
  // "0 3 * * *" broke into "0 3 *" and "* *"
  const cron = schedule.getByRole('list', { name: 'About the schedule of ui-narrow-nightly' }).locator('.mono');
  await expect(cron).toHaveText('0 3 * * *');
  expect(await linesOf(cron)).toBe(1);
  // no list of the screen scrolls sideways in its box, whatever rows other specs left there
  for (const box of await page.locator('.table-scroll').all()) expect(await box.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  await screenshot(page, 'narrow-scheduler');

  // Agents (both tables) and Settings' webhooks the same way
  await svcApi('agents', 'POST', '/tasks', { agent: 'ui-helper', task: 'NOOP read on a phone', priority: 'low' });
  await page.goto('/agents');
  await expectStacked(page.getByRole('table', { name: 'Agents' }).locator('[data-agent="ui-helper"]'), 'ui-helper', 'About ui-helper', 'Assign a task to ui-helper');
  // the status badge shares its line with the queue (the role came after it, and a long one left it alone on its line)
  const agentFacts = page.getByRole('list', { name: 'About ui-helper' }).getByRole('listitem');
  expect((await agentFacts.nth(0).boundingBox())?.y).toBe((await agentFacts.nth(1).boundingBox())?.y);
  // done and failed are two short facts, each on a line with another ("Done / failed 1 / 0" stood alone on its line)
  const facts = await agentFacts.evaluateAll((lis) => lis.map((li) => ({ text: li.textContent ?? '', top: Math.round(li.getBoundingClientRect().top) })));
  const counts = facts.filter((f) => /^(Done|Failed) /.test(f.text));
  expect(counts).toHaveLength(2);
  for (const f of counts) expect(facts.filter((g) => g.top === f.top).length, `${f.text} alone on its line`).toBeGreaterThan(1);
  const agentTask = page.getByRole('table', { name: 'Latest tasks' }).getByRole('row').filter({ hasText: 'NOOP read on a phone' }).first();
  await expectStacked(agentTask, 'NOOP read on a phone', 'About the task of ui-helper');
  const hookUrl = 'http://127.0.0.1:59/narrow-hook';
  const hook = await api<{ id: string }>('POST', '/webhooks', { url: hookUrl, events: ['approval.expired'], secret: 's3cret' });
  try {
    await page.goto('/settings');
    await expectStacked(page.getByRole('table', { name: 'Webhook list' }).locator(`[data-webhook="${hookUrl}"]`), hookUrl, `About webhook ${hookUrl}`, `Delete webhook ${hookUrl}`);
  } finally {
    await api('DELETE', `/webhooks/${hook.id}`);
  }
});

test("at 375 px New project's directory row and its Name and Branch stay inside the dialog; a filter bar's controls line up", async ({ page }) => {
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await expect(dialog.getByRole('region', { name: 'Directories' })).toBeVisible();
  // "Open" and "Find git repositories here" ran past the dialog's right edge, Branch stuck out of it, "↑ Up" broke in two
  const box = await dialog.boundingBox();
  if (!box) throw new Error('no dialog');
  for (const control of [
    dialog.getByRole('button', { name: 'Open', exact: true }),
    dialog.getByRole('button', { name: 'Find git repositories here' }),
    dialog.getByRole('button', { name: 'Parent directory' }),
    dialog.getByLabel('Name'),
    dialog.getByLabel('Branch'),
  ]) {
    const b = await control.boundingBox();
    expect(b, String(control)).not.toBeNull();
    expect(b?.x ?? 0, String(control)).toBeGreaterThanOrEqual(box.x);
    expect((b?.x ?? 0) + (b?.width ?? 0), String(control)).toBeLessThanOrEqual(box.x + box.width);
  }
  const up = await dialog.getByRole('button', { name: 'Parent directory' }).evaluate((el) => el.getBoundingClientRect().height);
  const open = await dialog.getByRole('button', { name: 'Open', exact: true }).evaluate((el) => el.getBoundingClientRect().height);
  expect(up).toBe(open);
  await screenshot(page, 'narrow-project-new', { fullPage: false });
  await page.keyboard.press('Escape');

  // the traces' filters, one under the other: each control starts at the same left edge (each started where its own
  // label ended)
  await page.goto('/traces');
  const filters = page.getByRole('form', { name: 'Trace filters' });
  const lefts = [];
  for (const label of ['Instance', 'Phone', 'Status']) lefts.push((await filters.getByLabel(label).boundingBox())?.x);
  expect(new Set(lefts).size, `left edges ${lefts.join(', ')}`).toBe(1);
});

/** How many lines the text of `locator` takes on the screen. */
const linesOf = (locator: Locator) =>
  locator.evaluate((el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
  });

test.describe('as an approver', () => {
  test.use({ apiKey: KEYS.alice });

  test("at 375 px Approvals and the trace list stack a row's columns under its main text; a name is not broken at its hyphen", async ({ page }) => {
    const project = await createProject('Narrow approvals');
    const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Stacked task' });
    const attempt = await api<{ id: string }>('POST', '/attempts', { taskId: task.id, llm: 'scripted' });
    const approval = await api<{ id: string }>('POST', '/approvals', {
      taskAttemptId: attempt.id,
      type: 'merge',
      title: 'Stacked on a phone',
      approvers: ['alice@example.com'],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const messageId = `narrow-${Date.now()}`;
    const message = 'Your order has shipped and arrives on Thursday';
    await svcApi('traces', 'POST', '/traces', { messageId, instance: 'shop-narrow-eu', to: '+15550109123', message, status: 'delivered', sentAt: new Date().toISOString() });
    const workflowName = `narrow-report-${Date.now() % 100_000}`;
    await svcApi('scheduler', 'POST', '/workflows', { name: workflowName, tasks: [{ name: 'say', type: 'script', script: 'echo hyphen' }] });
    const sideways = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

    // Approvals: the request, then its type, expiry, answers and requester under it, left of Approve and Reject (the
    // Type column ran under them, the other columns past them), and the table's box does not scroll sideways
    await page.goto('/approvals');
    const row = page.getByRole('table', { name: 'Pending approvals' }).locator(`[data-approval="${approval.id}"]`);
    await scrollWindowTo(row);
    await expect(row.getByText('Stacked on a phone')).toBeInViewport({ ratio: 1 });
    const facts = row.getByRole('list', { name: 'About Stacked on a phone' });
    await expect(facts).toBeInViewport({ ratio: 1 });
    await expect(facts).toContainText('Type merge');
    await expect(facts).toContainText(/Expires \d+m \d\ds left/);
    const [factsBox, approve] = [await facts.boundingBox(), await row.getByRole('button', { name: 'Approve Stacked on a phone' }).boundingBox()];
    expect((factsBox?.x ?? 0) + (factsBox?.width ?? 0)).toBeLessThanOrEqual(approve?.x ?? 0);
    // Reject under Approve, as wide (side by side they took a third of the row, with empty room under them)
    const reject = await row.getByRole('button', { name: 'Reject Stacked on a phone' }).boundingBox();
    expect(reject?.x).toBe(approve?.x);
    expect(reject?.width).toBe(approve?.width);
    expect(reject?.y ?? 0).toBeGreaterThanOrEqual((approve?.y ?? 0) + (approve?.height ?? 0));
    expect(await row.locator('xpath=ancestor::div[contains(@class, "table-scroll")][1]').evaluate((box) => box.scrollWidth - box.clientWidth)).toBeLessThanOrEqual(0);
    expect(await sideways()).toBeLessThanOrEqual(0);

    // the trace list: the message first, whole in the window, its status, time, instance and number under it (it
    // started at the box's right edge, with the time, the instance and the number before it)
    await page.goto('/traces');
    const trace = page.getByRole('table', { name: 'Trace list' }).locator(`[data-trace="${messageId}"]`);
    await scrollWindowTo(trace);
    await expect(trace.getByRole('cell').first()).toContainText(message);
    await expect(trace.getByRole('cell', { name: new RegExp(message) })).toBeInViewport({ ratio: 1 });
    await expect(trace.getByRole('list', { name: 'About this message' })).toContainText('Instance shop-narrow-eu');
    expect(await trace.locator('xpath=ancestor::div[contains(@class, "table-scroll")][1]').evaluate((box) => box.scrollWidth - box.clientWidth)).toBeLessThanOrEqual(0);
    expect(await sideways()).toBeLessThanOrEqual(0);
    // a name's word is not broken at its hyphen ("shop-narrow-" over "eu", "narrow-" over "report-…")
    expect(await linesOf(trace.getByRole('list', { name: 'About this message' }).getByText('shop-narrow-eu'))).toBe(1);
    await page.goto('/scheduler');
    const workflow = page.getByRole('table', { name: 'Workflows' }).getByText(workflowName, { exact: true });
    await expect(workflow).toBeVisible();
    expect(await linesOf(workflow)).toBe(1);
  });
});

test.describe('in a wide window', () => {
  test.use({ viewport: { width: 1360, height: 860 } });

  test("a project's long name and repository path wrap in their columns: the row's cost and buttons stay in view", async ({ page }) => {
    const name = `Wide-window-${'w'.repeat(120)}`;
    await api('POST', '/projects', { name, repository: { url: makeRepo(`wide-${'p'.repeat(60)}`) } });
    await page.goto('/projects');
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name }) });
    // the name and the path, unbroken, made the table 1,700 px wide: Cost, Edit and Delete past the window's edge
    await expect(row.getByRole('cell').filter({ hasText: /^\$\d+\.\d\d$/ })).toBeInViewport({ ratio: 1 });
    for (const button of [`Edit ${name}`, `Delete ${name}`]) {
    await scrollWindowTo(page.getByRole('button', { name: button }));
    await expect(page.getByRole('button', { name: button })).toBeInViewport({ ratio: 1 });
  }
    expect(await page.locator('.table-scroll').first().evaluate((box) => box.scrollWidth - box.clientWidth)).toBeLessThanOrEqual(0);
    // the screen's button stands level with its title (it stood lower, under the title's margin)
    const title = await page.getByRole('heading', { name: 'Projects', level: 1 }).boundingBox();
    const button = await page.getByRole('button', { name: 'New project' }).boundingBox();
    if (!title || !button) throw new Error('no title or New project');
    const middle = button.y + button.height / 2;
    expect(middle).toBeGreaterThanOrEqual(title.y);
    expect(middle).toBeLessThanOrEqual(title.y + title.height);
  });
});
