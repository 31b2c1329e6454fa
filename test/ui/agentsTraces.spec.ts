/** Agents (status, queue, assign), traces (filters, the per-day chart) and settings (API key, webhooks and deliveries). */
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { alertCountsSeen, api, createProject, expect, holdAnswers, hurried, KEYS, layoutShiftsIn, svcApi, test, watchAlertCounts, watchLayoutShifts } from './fixtures';
import { screenshot } from './screenshot';

test('an agent shows its status; assigning a task from its dialog (Enter) lands in the agent service', async ({ page }) => {
  await page.goto('/agents');
  const row = page.getByRole('table', { name: 'Agents' }).locator('[data-agent="ui-helper"]');
  await expect(row).toContainText('answers board questions');
  await expect(row).toContainText(/active|inactive/);
  await row.getByRole('button', { name: 'Assign a task to ui-helper' }).click();
  const dialog = page.getByRole('dialog', {
    name: 'Assign a task to ui-helper',
  });
  await dialog.getByLabel('Priority').selectOption('high');
  await dialog.getByLabel('Task').fill('NOOP summarise the board');
  await dialog.getByLabel('Task').press('Enter');
  await expect(dialog).toBeHidden();
  // the notice names the task in its words (it named its id, which the screen shows nowhere)
  await expect(page.getByRole('status').filter({ hasText: 'Assigned to ui-helper' })).toContainText('Assigned to ui-helper: NOOP summarise the board');
  await expect(page.getByRole('table', { name: 'Latest tasks' })).toContainText('NOOP summarise the board');
  const { tasks } = await svcApi<{
    tasks: { agent: string; task: string; priority: string }[];
  }>('agents', 'GET', '/tasks?agent=ui-helper');
  expect(tasks).toEqual(
    expect.arrayContaining([
      expect.objectContaining({
        task: 'NOOP summarise the board',
        priority: 'high',
      }),
    ]),
  );
  await screenshot(page, 'agents');

  // in a phone's window both tables stack a row's columns under its main text (narrow.spec.ts): neither box scrolls
  // sideways (Latest tasks' did, and took Tab for it: the delivery log's box, below, still does)
  await page.setViewportSize({ width: 390, height: 800 });
  await expect(page.getByRole('table', { name: 'Latest tasks' }).getByRole('list').first()).toBeVisible();
  await expect(page.getByRole('group', { name: 'Latest tasks' })).toHaveCount(0);
  await expect(page.getByRole('group', { name: 'Agents' })).toHaveCount(0);
  await page.setViewportSize({ width: 1360, height: 860 });
});

test.describe('refusals', () => {
  // the service's 400 answers are logged by the browser as failed loads; they are what these tests provoke
  test.use({ allowConsoleErrors: /status of 400/ });

  test('a refused assignment shows the service message, not a crash', async ({ page }) => {
    await page.goto('/agents');
    const row = page.getByRole('table', { name: 'Agents' }).locator('[data-agent="ui-helper"]');
    await row.getByRole('button', { name: 'Assign a task to ui-helper' }).click();
    const dialog = page.getByRole('dialog', {
      name: 'Assign a task to ui-helper',
    });
    // an empty task is refused by the browser (required); whitespace reaches the service, which answers 400 {detail}
    await dialog.getByLabel('Task').fill('   ');
    await dialog.getByRole('button', { name: 'Assign' }).click();
    await expect(dialog.getByRole('alert')).not.toBeEmpty();
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
  });
});

test('a long agent task (no space) wraps in its column and is cut after three lines: the row\'s button stays in view', async ({ page }) => {
  const long = `NOOP ${'x'.repeat(3000)}`;
  await svcApi('agents', 'POST', '/tasks', { agent: 'ui-helper', task: long, priority: 'low' });
  await page.goto('/agents');
  const latest = page.getByRole('table', { name: 'Latest tasks' });
  const cell = latest.getByRole('cell').filter({ hasText: 'NOOP xxx' }).first();
  await expect(cell).toBeVisible();
  // whole in its tooltip, cut on the screen: three lines at most (it was one 3,000-character line)
  await expect(cell).toHaveAttribute('title', long);
  expect((await cell.boundingBox())?.height).toBeLessThan(100);
  // neither table scrolls sideways in its box, so the Assign button is where it was (it was 20,000 px to the right)
  for (const box of await page.locator('.table-scroll').all()) {
    expect(await box.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(1);
  }
  await expect(page.getByRole('button', { name: 'Assign a task to ui-helper' })).toBeInViewport();
  await expect(page.getByRole('status').filter({ hasText: 'Loading…' })).toHaveCount(0);
});

test('agents: "Loading…" in each table while its list is on its way (Latest tasks showed nothing)', async ({ page }) => {
  const answer = await holdAnswers(page, /\/svc\/agents\/api\/v1\/(agents|tasks\?limit=20)$/);
  await page.goto('/agents');
  await expect(page.getByRole('status', { name: 'Agents: loading' })).toHaveText('Loading…');
  await expect(page.getByRole('status', { name: 'Latest tasks: loading' })).toHaveText('Loading…');
  await expect(page.getByText(/^No tasks yet\./)).toHaveCount(0);
  answer();
  await expect(page.getByRole('table', { name: 'Latest tasks' })).toBeVisible();
  await expect(page.getByRole('table', { name: 'Agents' })).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: 'Loading…' })).toHaveCount(0);
});

test('traces: the chart of messages per day is drawn from the analytics, and the status filter narrows the list', async ({ page }) => {
  const day = 86_400_000;
  const now = Date.now();
  const mk = (i: number, status: string, ago: number) =>
    svcApi('traces', 'POST', '/traces', {
      messageId: `ui-msg-${i}`,
      instance: 'ui-inst',
      to: '+15550102000',
      message: `hello ${i}`,
      status,
      sentAt: new Date(now - ago * day).toISOString(),
    });
  await Promise.all([mk(1, 'sent', 0), mk(2, 'delivered', 0), mk(3, 'read', 1), mk(4, 'failed', 1), mk(5, 'delivered', 1), mk(6, 'read', 3)]);
  const analytics = await svcApi<{ byDay: { date: string; count: number; byStatus: Record<string, number> }[] }>('traces', 'GET', '/traces/analytics?days=7');

  await page.goto('/traces');
  const chart = page.getByTestId('trace-chart');
  await expect(chart).toBeVisible();
  // one stacked bar per day of the period, a segment per status, as tall as its count says (the title carries it)
  await expect(chart.locator('g[data-day]')).toHaveCount(analytics.byDay.length);
  await expect(chart.locator('rect[data-status]')).toHaveCount(analytics.byDay.length * 4);
  for (const d of analytics.byDay) {
    await expect(chart.locator(`[data-day="${d.date}"] > title`)).toHaveText(new RegExp(`^${d.date}: ${d.count} ${d.count === 1 ? 'message' : 'messages'} \\(`)); // 3 days ago: "1 message"
    for (const s of ['sent', 'delivered', 'read', 'failed']) {
      await expect(chart.locator(`[data-day="${d.date}"] rect[data-status="${s}"]`)).toHaveAttribute('data-value', String(d.byStatus[s]));
    }
  }
  // yesterday: one read, one failed, one delivered, stacked
  const yesterday = analytics.byDay[analytics.byDay.length - 2] as { byStatus: Record<string, number> };
  expect(yesterday.byStatus).toEqual({ sent: 0, delivered: 1, read: 1, failed: 1 });
  const heights = await chart.locator('g[data-day]').evaluateAll((gs) =>
    gs.map((g) => [...g.querySelectorAll('rect')].reduce((sum, r) => sum + Number(r.getAttribute('height')), 0)),
  );
  const counts = analytics.byDay.map((d) => d.count);
  const maxAt = counts.indexOf(Math.max(...counts));
  expect(heights[maxAt]).toBeCloseTo(Math.max(...heights), 5);
  expect(heights[maxAt]).toBeGreaterThan(0);

  await page.getByRole('form', { name: 'Trace filters' }).getByLabel('Status').selectOption('failed');
  await expect(page).toHaveURL(/status=failed/);
  const list = page.getByRole('table', { name: 'Trace list' });
  await expect(list.locator('tbody tr')).toHaveCount(1);
  await expect(list).toContainText('hello 4');
  await screenshot(page, 'traces');

  // filters that match nothing: the list says so instead of an empty table
  const filters = page.getByRole('form', { name: 'Trace filters' });
  await filters.getByLabel('Phone').fill('+15550109999');
  await filters.getByRole('button', { name: 'Apply' }).click();
  await expect(page.getByText('No traces match these filters.')).toBeVisible();
  await expect(list).toHaveCount(0);
});

test.describe('traces: the chart read at its own size', () => {
  /** Each date label under the chart, as drawn on the screen. */
  const labels = (page: Page) =>
    page.getByTestId('trace-chart').evaluate((svg) => {
      const box = svg.getBoundingClientRect();
      const rects = [...svg.querySelectorAll('text[data-label]')].map((t) => t.getBoundingClientRect());
      return { box: { left: box.left, right: box.right }, rects: rects.map((r) => ({ left: r.left, right: r.right, height: r.height })) };
    });
  const expectReadable = (seen: Awaited<ReturnType<typeof labels>>) => {
    expect(seen.rects.length).toBeGreaterThan(1);
    // 11 px text drawn at its size (shrunk with the drawing into a phone's width it was 5 px high)
    for (const r of seen.rects) expect(r.height).toBeGreaterThanOrEqual(10);
    // side by side, none over the next (30 days ran into one unreadable line), all inside the chart
    for (let i = 1; i < seen.rects.length; i++) expect(seen.rects[i]?.left).toBeGreaterThanOrEqual(seen.rects[i - 1]?.right ?? 0);
    expect(seen.rects[0]?.left).toBeGreaterThanOrEqual(seen.box.left);
    expect(seen.rects.at(-1)?.right).toBeLessThanOrEqual(seen.box.right);
  };

  test.beforeAll(async () => {
    const now = Date.now();
    for (let i = 0; i < 30; i++) {
      await svcApi('traces', 'POST', '/traces', {
        messageId: `ui-chart-${now}-${i}`,
        instance: 'ui-chart',
        to: '+15550102001',
        message: `day ${i}`,
        status: 'delivered',
        sentAt: new Date(now - i * 86_400_000).toISOString(),
      });
    }
  });

  test('in a 390 px window its dates are readable, for 7 and for 30 days', async ({ page }) => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto('/traces');
    await expect(page.getByTestId('trace-chart').locator('g[data-day]')).toHaveCount(7);
    expectReadable(await labels(page));
    await page.getByLabel('Period').selectOption('30');
    await expect(page.getByTestId('trace-chart').locator('g[data-day]')).toHaveCount(30);
    expectReadable(await labels(page));
    await screenshot(page, 'narrow-traces');
  });

  test('in a wide window, 30 days of dates do not run into each other', async ({ page }) => {
    await page.goto('/traces');
    await page.getByLabel('Period').selectOption('30');
    await expect(page.getByTestId('trace-chart').locator('g[data-day]')).toHaveCount(30);
    expectReadable(await labels(page));
  });
});

test('traces: "Loading…" while the first page of traces and the analytics load (the list showed nothing), then the list', async ({ page }) => {
  const answer = await holdAnswers(page, /\/svc\/traces\/api\/v1\/traces(\/analytics)?\?/);
  await page.goto('/traces');
  const traces = page.getByRole('region', { name: 'Traces' });
  await expect(traces.getByRole('status', { name: 'Trace list: loading' })).toHaveText('Loading…');
  await expect(page.getByRole('region', { name: 'Analytics' }).getByRole('status')).toHaveText('Loading…');
  // nothing is said about the traces before they are known: neither a count nor the empty text
  await expect(traces.getByText(/matching|No traces/)).toHaveCount(0);
  answer();
  await expect(traces.getByRole('table', { name: 'Trace list' })).toBeVisible();
  await expect(traces.getByText(/\d+ matching/)).toBeVisible();
  await expect(page.getByTestId('trace-chart')).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: 'Loading…' })).toHaveCount(0);
});

test('traces: the chart, when it comes after the list, keeps the room it had while loading: the filters do not move', async ({ page }) => {
  const answer = await holdAnswers(page, /\/svc\/traces\/api\/v1\/traces\/analytics\?/);
  await page.goto('/traces');
  const traces = page.getByRole('region', { name: 'Traces' });
  await expect(traces.getByRole('table', { name: 'Trace list' }).or(traces.getByText(/No traces/))).toBeVisible();
  await expect(page.getByRole('region', { name: 'Analytics' }).getByRole('status')).toHaveText('Loading…');
  const apply = page.getByRole('form', { name: 'Trace filters' }).getByRole('button', { name: 'Apply' });
  const before = await apply.boundingBox();
  answer();
  await expect(page.getByTestId('trace-chart')).toBeVisible();
  // it was 309 px lower once the chart came (a click aimed at Apply meanwhile landed beside it)
  expect(await apply.boundingBox()).toEqual(before);
});

/** A receiver nobody serves: port 59 (not one of fetch's bad ports, which are refused at registration). */
const HOOK_URL = 'http://127.0.0.1:59/ui-hook';

test.describe('settings', () => {
  test.use({ allowConsoleErrors: /status of 400/ });

  test('settings: a webhook is created from the dialog and shows its delivery log; the stored key can be cleared and set', async ({ page }) => {
    await openSettings(page);
    await page.getByRole('button', { name: 'New webhook' }).click();
    const dialog = page.getByRole('dialog', { name: 'New webhook' });
    // a URL the service refuses: its message is shown in the dialog
    await dialog.getByLabel('URL').fill('ftp://example.com/hook');
    await dialog.getByLabel('Secret').fill('s3cret');
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    await expect(dialog.getByRole('alert')).toContainText(/url/i);
    // a port fetch never connects to (port 9, a "bad port"): refused, saying what to do (docs/webhooks.md)
    await dialog.getByLabel('URL').fill('http://127.0.0.1:9/ui-hook');
    await dialog.getByRole('button', { name: 'Create webhook' }).click();
    await expect(dialog.getByRole('alert')).toContainText('port 9');
    await expect(dialog.getByRole('alert')).toContainText('use another port');
    await dialog.getByLabel('URL').fill(HOOK_URL);
    await dialog.getByLabel('task.created').check();
    await dialog.getByLabel('URL').press('Enter');
    await expect(dialog).toBeHidden();
    const row = page.getByRole('table', { name: 'Webhook list' }).locator(`[data-webhook="${HOOK_URL}"]`);
    await expect(row).toContainText('task.created');
    const hooks = await api<{ url: string; events: string[] }[]>('GET', '/webhooks');
    expect(hooks).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          url: HOOK_URL,
          events: expect.arrayContaining(['task.status_changed', 'task.created']),
        }),
      ]),
    );
    await row.getByRole('button', { name: 'Deliveries' }).click();
    await expect(
      page.getByRole('heading', {
        name: `Deliveries of ${HOOK_URL}`,
      }),
    ).toBeVisible();
    // pressed while its log is open, and filled so (it looked like the other buttons)
    await expect(row.getByRole('button', { name: 'Deliveries' })).toHaveAttribute('aria-pressed', 'true');
    await expect(row.getByRole('button', { name: 'Deliveries' })).toHaveCSS('background-color', 'rgb(47, 91, 211)');
    // an event the hook listens to: its delivery (failed: nothing listens on port 59) shows in the log once the page
    // refetches (on focus: there is no stream of deliveries)
    const source = await createProject('Webhook Source');
    await api('POST', '/tasks', { projectId: source.id, title: 'fires a webhook' });
    const deliveries = page.getByRole('table', { name: 'Deliveries' });
    await expect(async () => {
      await page.evaluate(() => window.dispatchEvent(new Event('visibilitychange')));
      await expect(deliveries).toContainText('task.created', { timeout: 1000 });
    }).toPass({ timeout: 30_000 });
    // the try's duration in the board's words, as the API recorded it (it said "83 ms", under "Time")
    const hookId = (await api<{ id: string; url: string }[]>('GET', '/webhooks')).find((h) => h.url === HOOK_URL)?.id;
    const tried = (await api<{ event: string; attempt: number; durationMs: number }[]>('GET', `/webhooks/${hookId}/deliveries`)).find((x) => x.event === 'task.created' && x.attempt === 1);
    expect(tried).toBeDefined();
    const ms = tried?.durationMs ?? Number.NaN;
    await expect(deliveries.getByRole('columnheader')).toHaveText(['When', 'Event', 'Try', 'Result', 'Duration']);
    const firstTry = deliveries.locator('tbody tr').filter({ has: page.locator('td:nth-child(2)', { hasText: /^task\.created$/ }) }).filter({ has: page.locator('td:nth-child(3)', { hasText: /^1$/ }) });
    await expect(firstTry.locator('td').nth(4)).toHaveText(ms > 0 && ms < 50 ? '< 0.1 s' : `${(ms / 1000).toFixed(1)} s`);
    for (const text of await deliveries.locator('tbody td:nth-child(5)').allTextContents()) expect(text).toMatch(/^(< 0\.1|\d+\.\d) s$/);
    // the failed try shows on the webhook's row too: its receiver is failing (docs/webhooks.md, "The breaker")
    await expect(async () => {
      await page.evaluate(() => window.dispatchEvent(new Event('visibilitychange')));
      await expect(row).toContainText(/failing since .*failed tr(y|ies) in a row/, { timeout: 1000 });
    }).toPass({ timeout: 30_000 });
    await screenshot(page, 'settings');

    // in a phone's window the delivery log scrolls sideways in its box; it has nothing to focus in it, so its box takes
    // Tab, named as its table, and the arrow keys scroll it (only a mouse or a touch could: axe's
    // scrollable-region-focusable, WCAG 2.1.1); the webhook list above stacks its rows, and fits its width
    await page.setViewportSize({ width: 390, height: 800 });
    const deliveriesBox = page.getByRole('group', { name: 'Deliveries' });
    await expect(deliveriesBox).toHaveAttribute('tabindex', '0');
    expect(await page.getByRole('table', { name: 'Webhook list' }).locator('xpath=..').evaluate((box) => box.scrollWidth - box.clientWidth)).toBeLessThanOrEqual(0);
    await page.getByRole('table', { name: 'Webhook list' }).getByRole('button').last().focus();
    await page.keyboard.press('Tab');
    await expect(deliveriesBox).toBeFocused();
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => deliveriesBox.evaluate((el) => el.scrollLeft)).toBeGreaterThan(0);
    const { violations } = await new AxeBuilder({ page }).withRules(['scrollable-region-focusable']).analyze();
    expect(violations.flatMap((v) => v.nodes.map((n) => n.target.join(' ')))).toEqual([]);
    // a box that fits is no stop of the Tab order
    await page.setViewportSize({ width: 1360, height: 860 });
    await expect(page.getByRole('group', { name: 'Deliveries' })).toHaveCount(0);
    await expect(page.getByRole('table', { name: 'Deliveries' }).locator('xpath=..')).not.toHaveAttribute('tabindex');

    // deleted from its row, after a confirmation: the list and the API no longer have it. Left in place (before
    // session 44's breaker), it had every later spec's task.created and status change delivered to its port, eight tries
    // each over two minutes: after the 1,000-task board's 1,600 events, the suite's armada and Temporal took two thirds
    // of the two cores for minutes
    await row.getByRole('button', { name: `Delete webhook ${HOOK_URL}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete webhook' });
    await expect(confirm).toContainText(`Stop sending events to ${HOOK_URL}?`);
    await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect(confirm).toBeHidden();
    await expect(row).toHaveCount(0);
    expect((await api<{ url: string }[]>('GET', '/webhooks')).map((h) => h.url)).not.toContain(HOOK_URL);

    await expect(page.getByTestId('stored-key')).not.toHaveText('none');
    await page.getByRole('button', { name: 'Clear key' }).click();
    await expect(page.getByTestId('stored-key')).toHaveText('none');
    expect(await page.evaluate(() => window.sessionStorage.getItem('armada.apiKey'))).toBeNull();
    await page.getByLabel('New key').fill(KEYS.task);
    await page.getByRole('button', { name: 'Save key' }).click();
    expect(await page.evaluate(() => window.sessionStorage.getItem('armada.apiKey'))).toBe(KEYS.task);
  });
});

const EMPTY_PROJECTS = { success: true, data: [], pagination: { page: 1, limit: 100, total: 0, pages: 1, hasNext: false, hasPrev: false } };

test.describe('settings: the agent profiles', () => {
  // the multi-agent service down (503) is logged by the browser as a failed load: what the last step arranges
  test.use({ allowConsoleErrors: /status of 503/ });

  test('say "Loading…" until the projects and agents have answered, and "none" only when both answered so', async ({ page }) => {
    const answer = await holdAnswers(page, /\/svc\/agents\/api\/v1\/agents$/);
    await page.clock.install();
    await page.goto('/settings');
    const profiles = page.getByRole('region', { name: 'Agent profiles in use' });
    // the projects have answered, the agents not yet: nothing is known to list (it said no profile was named)
    await expect(profiles.getByRole('status', { name: 'Agent profiles: loading' })).toHaveText('Loading…');
    await expect(profiles.getByText(/names? a profile/)).toHaveCount(0);
    await expect(profiles.getByRole('table')).toHaveCount(0);
    answer();
    await expect(profiles.getByRole('table', { name: 'Agent profiles' }).locator('[data-profile="scripted"]')).toContainText('agent ui-helper');
    await expect(profiles.getByRole('status')).toHaveCount(0);

    // both answers empty: now, and only now, the empty text
    await page.route(/\/svc\/agents\/api\/v1\/agents$/, (route) => route.fulfill({ json: { agents: [] } }));
    await page.route(/\/api\/projects\?/, (route) => route.fulfill({ json: EMPTY_PROJECTS }));
    await page.reload();
    await expect(profiles.getByText('No project or agent names a profile (projects use the server default).')).toBeVisible();
    await expect(profiles.getByRole('table')).toHaveCount(0);

    // the multi-agent service down: its error, and the empty text says the agents' profiles are not known
    await page.route(/\/svc\/agents\/api\/v1\/agents$/, (route) => route.fulfill({ status: 503, json: { detail: 'multi-agent service unavailable' } }));
    await page.reload();
    // its read tried twice more (1 and 2 s apart) before the error, on a clock 10 times as fast (hurried)
    await hurried(page, () => expect(profiles.getByRole('alert')).toContainText('The multi-agent service is unavailable (HTTP 503)', { timeout: 20_000 }));
    await expect(profiles.getByText('No project names a profile. The agents could not be read (above), so the profiles they name are not listed.')).toBeVisible();
    await expect(profiles.getByText('No project or agent names a profile (projects use the server default).')).toHaveCount(0);
  });
});

test.describe('the multi-agent and trace services down', () => {
  test.use({ allowConsoleErrors: /status of 503/ });
  const down = { status: 503, json: { detail: 'The database (PostgreSQL) is not answering; try again' } };

  test('Agents: said once for the screen (each list said it), kept through the tries (it blinked away at each), then both lists', async ({ page }) => {
    let tries = 0;
    await page.route(/\/svc\/agents\/api\/v1\/(agents|tasks)(\?.*)?$/, (route) => {
      if (new URL(route.request().url()).pathname.endsWith('/agents')) tries++;
      return route.fulfill(down);
    });
    await watchAlertCounts(page);
    await page.clock.install();
    await page.goto('/agents');
    const alerts = page.getByRole('alert');
    // the screen's tries (1 and 2 s apart, then every 5 s) on a clock 10 times as fast (hurried)
    await hurried(page, () =>
      expect(alerts.filter({ hasText: 'The multi-agent service is unavailable (HTTP 503). This screen tries again every 5 seconds by itself.' })).toHaveCount(1, {
        timeout: 20_000,
      }),
    );
    await expect(alerts).toHaveCount(1);
    for (const name of ['Agents', 'Latest agent tasks']) {
      await expect(page.getByRole('region', { name }).getByText('Not loaded: the multi-agent service is unavailable (above).')).toBeVisible();
    }
    await screenshot(page, 'agents-outage');
    // a round of the screen's own tries, refused too
    await hurried(page, async () => {
      const first = tries;
      await expect.poll(() => tries, { timeout: 20_000 }).toBeGreaterThanOrEqual(first + 3);
      await expect(alerts).toHaveCount(1);
      await page.unroute(/\/svc\/agents\/api\/v1\/(agents|tasks)(\?.*)?$/);
      await expect(page.getByRole('table', { name: 'Agents' }).locator('[data-agent="ui-helper"]')).toBeVisible({ timeout: 15_000 });
    });
    await expect(page.getByText('Not loaded')).toHaveCount(0);
    await expect(alerts).toHaveCount(0);
    // 0 while loading, 1 from the first refusal until the service was back (never 2, nor 0 at a try), then 0
    expect(await alertCountsSeen(page)).toEqual([0, 1, 0]);
  });

  test('Agents: the agents\' status reads refused are said once, with the others (they failed silently), kept through the tries', async ({ page }) => {
    const statusPath = /\/svc\/agents\/api\/v1\/agents\/[^/]+\/status(\?.*)?$/;
    let tries = 0;
    await page.route(statusPath, (route) => {
      tries++;
      return route.fulfill(down);
    });
    await watchAlertCounts(page);
    await page.clock.install();
    await page.goto('/agents');
    const row = page.getByRole('table', { name: 'Agents' }).locator('[data-agent="ui-helper"]');
    await expect(row).toBeVisible();
    const alerts = page.getByRole('alert');
    // the screen's tries (1 and 2 s apart, then every 5 s) on a clock 10 times as fast (hurried)
    await hurried(page, () => expect(alerts.filter({ hasText: 'Agent statuses could not be read:' })).toHaveCount(1, { timeout: 20_000 }));
    await expect(alerts).toHaveCount(1);
    await expect(alerts).toContainText('The multi-agent service is unavailable (HTTP 503). This screen tries again every 5 seconds by itself.');
    await screenshot(page, 'agents-statuses-refused');
    await expect(row.locator('td.num').first()).toHaveText('—');
    // a round of the screen's own tries, refused too: the error stays, said once
    await hurried(page, async () => {
      const first = tries;
      await expect.poll(() => tries, { timeout: 20_000 }).toBeGreaterThanOrEqual(first + 2);
      await expect(alerts).toHaveCount(1);
      await page.unroute(statusPath);
      await expect(row.locator('td.num').first()).toHaveText(/^\d+$/, { timeout: 15_000 });
    });
    await expect(alerts).toHaveCount(0);
    expect(await alertCountsSeen(page)).toEqual([0, 1, 0]);
  });

  test('Settings: the webhooks refused, then back, do not move the profiles: shown from the first frame, their box stays put (it moved once, when the list came)', async ({ page }) => {
    const hooksPath = /\/api\/webhooks(\?.*)?$/;
    const url = 'http://127.0.0.1:59/ui-hook-after-outage';
    const hook = await api<{ id: string }>('POST', '/webhooks', { url, events: ['task.created'], secret: 's3cret' });
    try {
      let tries = 0;
      await page.route(hooksPath, (route) => {
        tries++;
        return route.fulfill({ status: 503, json: { success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'The database (PostgreSQL) is not answering; try again', details: {} } } });
      });
      await watchLayoutShifts(page);
      // whether the profiles are shown, each time it changes, from the first frame
      await page.addInitScript(() => {
        const w = window as unknown as { profilesShown: boolean[] };
        w.profilesShown = [];
        const look = () => {
          const section = document.querySelector<HTMLElement>('section[aria-label="Agent profiles in use"]');
          if (!section) return;
          const shown = section.checkVisibility();
          if (w.profilesShown.at(-1) !== shown) w.profilesShown.push(shown);
        };
        document.addEventListener('DOMContentLoaded', () =>
          new MutationObserver(look).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['hidden'] }),
        );
      });
      await page.clock.install();
      await page.goto('/settings');
      const webhooks = page.getByRole('region', { name: 'Webhooks' });
      const profiles = page.locator('section[aria-label="Agent profiles in use"]');
      // the screen's tries (1 and 2 s apart, then every 5 s) on a clock 10 times as fast (hurried)
      const during = await hurried(page, async () => {
        await expect(webhooks.getByRole('alert')).toContainText('HTTP 503', { timeout: 20_000 });
        await expect(profiles.getByRole('table', { name: 'Agent profiles' }).locator('[data-profile="scripted"]')).toBeVisible();
        const box = await profiles.boundingBox();
        const first = tries;
        await expect.poll(() => tries, { timeout: 20_000 }).toBeGreaterThanOrEqual(first + 2);
        await page.unroute(hooksPath);
        await expect(webhooks.getByRole('table', { name: 'Webhook list' }).locator(`[data-webhook="${url}"]`)).toBeVisible({ timeout: 15_000 });
        return box;
      });
      await expect(webhooks.getByRole('alert')).toHaveCount(0);
      await screenshot(page, 'settings-after-outage');
      // the rows took the error's place in a box of the same height: the section below did not move
      expect(await profiles.boundingBox()).toEqual(during);
      expect(await layoutShiftsIn(page, 'section[aria-label="Agent profiles in use"]')).toEqual([]);
      // shown from the first frame, and throughout (hidden at each try once, then only until the first answer)
      expect(await page.evaluate(() => (window as unknown as { profilesShown: boolean[] }).profilesShown)).toEqual([true]);
    } finally {
      await api('DELETE', `/webhooks/${hook.id}`);
    }
  });

  test('Traces: the chart and the list down is one error for the screen (each said it)', async ({ page }) => {
    await page.route(/\/svc\/traces\/api\/v1\/traces(\/analytics)?(\?.*)?$/, (route) => route.fulfill(down));
    await page.clock.install();
    await page.goto('/traces');
    const alerts = page.getByRole('alert');
    // the screen's tries (1 and 2 s apart) before the error, on a clock 10 times as fast (hurried)
    await hurried(page, () => expect(alerts.filter({ hasText: 'The message trace service is unavailable (HTTP 503).' })).toHaveCount(1, { timeout: 20_000 }));
    await expect(alerts).toHaveCount(1);
    for (const name of ['Analytics', 'Traces']) {
      await expect(page.getByRole('region', { name }).getByText('Not loaded: the message trace service is unavailable (above).')).toBeVisible();
    }
    await page.unroute(/\/svc\/traces\/api\/v1\/traces(\/analytics)?(\?.*)?$/);
    await page.getByRole('button', { name: 'Retry' }).click();
    await expect(page.getByTestId('trace-chart')).toBeVisible();
    await expect(alerts).toHaveCount(0);
    await expect(page.getByText('Not loaded')).toHaveCount(0);
  });
});

test('settings: the agent profiles, which come when the multi-agent service answers, no longer move the webhooks and their buttons', async ({ page }) => {
  const url = 'http://127.0.0.1:59/ui-hook-steady';
  const hook = await api<{ id: string }>('POST', '/webhooks', { url, events: ['task.created'], secret: 's3cret' });
  try {
    const answer = await holdAnswers(page, /\/svc\/agents\/api\/v1\/agents$/);
    await page.goto('/settings');
    const create = page.getByRole('button', { name: 'New webhook' });
    const del = page.getByRole('button', { name: `Delete webhook ${url}` });
    await expect(del).toBeVisible();
    await expect(page.getByRole('status', { name: 'Agent profiles: loading' })).toBeVisible();
    const before = [await create.boundingBox(), await del.boundingBox()];
    answer();
    await expect(page.getByRole('table', { name: 'Agent profiles' }).locator('[data-profile="scripted"]')).toBeVisible();
    // the profiles' table grew from one line to its rows: above the webhooks it pushed them down, and a click aimed at
    // New webhook or Delete meanwhile landed beside it
    expect([await create.boundingBox(), await del.boundingBox()]).toEqual(before);
  } finally {
    await api('DELETE', `/webhooks/${hook.id}`);
  }
});

test('settings: the webhooks coming no longer move the agent profiles below them (a layout shift)', async ({ page }) => {
  const urls = ['a', 'b', 'c'].map((x) => `http://127.0.0.1:59/ui-hook-below-${x}`);
  const hooks = [];
  for (const url of urls) hooks.push(await api<{ id: string }>('POST', '/webhooks', { url, events: ['task.created'], secret: 's3cret' }));
  try {
    await watchLayoutShifts(page);
    const answer = await holdAnswers(page, /\/api\/webhooks(\?.*)?$/);
    await page.goto('/settings');
    const profiles = page.locator('section[aria-label="Agent profiles in use"]');
    await expect(page.getByRole('status', { name: 'Webhook list: loading' })).toBeVisible();
    // the profiles are shown at once: the webhooks' box above them keeps its height while their list is on its way
    await expect(profiles.getByRole('table', { name: 'Agent profiles' }).locator('[data-profile="scripted"]')).toBeVisible();
    const top = (await profiles.boundingBox())?.y;
    answer();
    await expect(page.getByRole('table', { name: 'Webhook list' }).locator(`[data-webhook="${urls[2]}"]`)).toBeVisible();
    await expect(profiles.getByRole('table', { name: 'Agent profiles' }).locator('[data-profile="scripted"]')).toBeVisible();
    // shown at once, the section was pushed down by the webhooks' rows when they came
    expect(await layoutShiftsIn(page, 'section[aria-label="Agent profiles in use"]')).toEqual([]);
    expect((await profiles.boundingBox())?.y).toBe(top);
  } finally {
    for (const h of hooks) await api('DELETE', `/webhooks/${h.id}`);
  }
});

/** Opens Settings and waits until the webhooks have come (nothing above them comes later: the profiles are below). */
async function openSettings(page: Page): Promise<void> {
  await page.goto('/settings');
  const webhooks = page.getByRole('region', { name: 'Webhooks' });
  await expect(webhooks.getByRole('table', { name: 'Webhook list' }).or(webhooks.getByText(/^No webhooks yet\./))).toBeVisible();
}

test.describe('settings: webhooks while a request is on its way, and refused', () => {
  test.use({ allowConsoleErrors: /status of 404/ });

  test('Create webhook is off while the create waits (a second Enter made a second webhook)', async ({ page }) => {
    const url = 'http://127.0.0.1:59/ui-hook-once';
    await openSettings(page);
    await page.getByRole('button', { name: 'New webhook' }).click();
    const dialog = page.getByRole('dialog', { name: 'New webhook' });
    await dialog.getByLabel('URL').fill(url);
    await dialog.getByLabel('Secret').fill('s3cret');
    await dialog.getByLabel('task.status_changed').uncheck();
    await dialog.getByLabel('approval.expired').check();
    const answer = await holdAnswers(page, /\/api\/webhooks$/);
    await dialog.getByLabel('URL').press('Enter');
    await expect(dialog.getByRole('button', { name: 'Creating…' })).toBeDisabled();
    await dialog.getByLabel('URL').press('Enter');
    answer();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('table', { name: 'Webhook list' }).locator(`[data-webhook="${url}"]`)).toHaveCount(1);
    const made = (await api<{ id: string; url: string }[]>('GET', '/webhooks')).filter((h) => h.url === url);
    expect(made).toHaveLength(1);
    for (const h of made) await api('DELETE', `/webhooks/${h.id}`);
  });

  test('Delete waits in its dialog for the answer; one deleted elsewhere meanwhile is said to be gone already', async ({ page }) => {
    const mk = (url: string) => api<{ id: string }>('POST', '/webhooks', { url, events: ['approval.expired'], secret: 's3cret' });
    const first = await mk('http://127.0.0.1:59/ui-hook-held');
    const second = await mk('http://127.0.0.1:59/ui-hook-gone');
    await openSettings(page);
    const list = page.getByRole('table', { name: 'Webhook list' });

    // the answer held: the dialog stays, its Delete off, until it comes (it closed at once; a failure was a toast)
    const answer = await holdAnswers(page, new RegExp(`/api/webhooks/${first.id}$`));
    await list.getByRole('button', { name: 'Delete webhook http://127.0.0.1:59/ui-hook-held' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete webhook' });
    await confirm.getByRole('button', { name: 'Delete', exact: true }).press('Enter');
    await expect(confirm.getByRole('button', { name: 'Delete', exact: true })).toBeDisabled();
    answer();
    await expect(confirm).toBeHidden();
    await expect(list.locator('[data-webhook="http://127.0.0.1:59/ui-hook-held"]')).toHaveCount(0);

    // deleted through the API while listed: Delete says it is gone already and drops the row, with no error
    await api('DELETE', `/webhooks/${second.id}`);
    await list.getByRole('button', { name: 'Delete webhook http://127.0.0.1:59/ui-hook-gone' }).click();
    await confirm.getByRole('button', { name: 'Delete', exact: true }).click();
    await expect(confirm).toBeHidden();
    await expect(page.getByRole('status').filter({ hasText: 'http://127.0.0.1:59/ui-hook-gone was already deleted (elsewhere)' })).toBeVisible();
    await expect(page.getByRole('alert')).toHaveCount(0);
    await expect(list.locator('[data-webhook="http://127.0.0.1:59/ui-hook-gone"]')).toHaveCount(0);
    expect((await api<{ url: string }[]>('GET', '/webhooks')).map((h) => h.url)).not.toContain('http://127.0.0.1:59/ui-hook-held');
  });

  test('a long webhook URL (no space) wraps in its column: the row\'s buttons stay in view', async ({ page }) => {
    const url = `http://127.0.0.1:59/${'a'.repeat(1500)}`;
    const hook = await api<{ id: string }>('POST', '/webhooks', { url, events: ['approval.expired'], secret: 's3cret' });
    try {
      await openSettings(page);
      const row = page.getByRole('table', { name: 'Webhook list' }).locator(`[data-webhook="${url}"]`);
      await expect(row).toBeVisible();
      await expect(row.getByRole('button', { name: `Delete webhook ${url}` })).toBeInViewport();
      for (const box of await page.locator('.table-scroll').all()) {
        expect(await box.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(1);
      }
      // its delivery log's heading names it too, and breaks inside the page
      await row.getByRole('button', { name: 'Deliveries' }).click();
      await expect(page.getByRole('heading', { name: `Deliveries of ${url}` })).toBeVisible();
      expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
    } finally {
      await api('DELETE', `/webhooks/${hook.id}`);
    }
  });

  test('Save key with nothing typed says so at the field (it did nothing)', async ({ page }) => {
    await openSettings(page);
    await page.getByRole('button', { name: 'Save key' }).click();
    const field = page.getByLabel('New key');
    await expect(page.getByRole('region', { name: 'API key' }).getByRole('alert')).toHaveText('Type the key: it cannot be empty.');
    await expect(field).toHaveAttribute('aria-invalid', 'true');
    await field.fill('x');
    await expect(page.getByRole('region', { name: 'API key' }).getByRole('alert')).toHaveCount(0);
    expect(await page.evaluate(() => window.sessionStorage.getItem('armada.apiKey'))).toBe(KEYS.task);
  });
});
