/** The scheduler screen: a source with its health, a schedule paused and resumed (checked through the API), run now and logs. */
import { startFakeFlowBuilder } from '../support/fakeFlowBuilder';
import { expect, holdAnswers, hurried, lineStarts, svcApi, test } from './fixtures';
import { screenshot } from './screenshot';

interface Schedule {
  workflow: string;
  enabled: boolean;
  nextRun: string | null;
}

test('a source shows its health; after the platform goes down, Check now shows it unhealthy with the error', async ({ page }) => {
  const fake = await startFakeFlowBuilder();
  try {
    const src = await svcApi<{ id: string; name: string }>('scheduler', 'POST', '/sources', { name: 'ui-flows', source_type: 'flow-builder', url: fake.url });
    await page.goto('/scheduler');
    const row = page.getByRole('table', { name: 'Sources' }).locator('[data-source="ui-flows"]');
    await expect(row).toContainText('healthy');
    await expect(row).not.toContainText('unhealthy');
    await fake.stop();
    await row.getByRole('button', { name: 'Check health of ui-flows' }).click();
    await expect(row).toContainText('unhealthy');
    const stored = await svcApi<{ status: string; last_health_error: string | null }>('scheduler', 'GET', `/sources/${src.id}`);
    expect(stored.last_health_error).not.toBeNull();
  } finally {
    await fake.close();
  }
});

test('pause then resume a schedule from the screen: the scheduler API says so each time', async ({ page }) => {
  await svcApi('scheduler', 'POST', '/workflows', {
    name: 'ui-nightly',
    description: 'nightly report',
    schedule: '0 3 * * *',
    timezone: 'Europe/Paris',
    tasks: [{ name: 'say', type: 'script', script: 'echo nightly' }],
  });
  await page.goto('/scheduler');
  const row = page.getByRole('table', { name: 'Schedules' }).locator('[data-schedule="ui-nightly"]');
  await expect(row).toContainText('0 3 * * *');
  await expect(row).toContainText('Europe/Paris');
  await expect(row).toContainText('active');

  await row.getByRole('button', { name: 'Pause ui-nightly' }).click();
  await expect(row).toContainText('paused');
  let s = (await svcApi<{ schedules: Schedule[] }>('scheduler', 'GET', '/schedules')).schedules.find((x) => x.workflow === 'ui-nightly');
  expect(s?.enabled).toBe(false);

  await row.getByRole('button', { name: 'Resume ui-nightly' }).click();
  await expect(row).toContainText('active');
  s = (await svcApi<{ schedules: Schedule[] }>('scheduler', 'GET', '/schedules')).schedules.find((x) => x.workflow === 'ui-nightly');
  expect(s?.enabled).toBe(true);
  expect(s?.nextRun).not.toBeNull();
});

test('run a workflow now: its execution appears and its logs open in a dialog that Escape closes', async ({ page }) => {
  // its second line is longer than the log box is wide
  const wide = Array.from({ length: 60 }, (_, i) => `word${i + 1}`).join(' ');
  await svcApi('scheduler', 'POST', '/workflows', { name: 'ui-manual', tasks: [{ name: 'hello', type: 'script', script: `echo hello-from-ui && echo ${wide}` }] });
  await page.goto('/scheduler');
  const listReads: number[] = [];
  page.on('request', (r) => {
    if (/\/svc\/scheduler\/api\/v1\/executions\?/.test(r.url())) listReads.push(Date.now());
  });
  await page.getByRole('button', { name: 'Run ui-manual now' }).click();
  const exec = page.getByRole('table', { name: 'Executions' }).locator('tr', { hasText: 'ui-manual' }).first();
  await expect(exec).toBeVisible();
  // the scheduler has no stream: while an execution runs, the screen reads the lists again by itself, so the run's
  // end shows with no click (it stayed "running" until a focus or Refresh)
  await expect(exec).toContainText('completed', { timeout: 30_000 });
  // its duration in the board's words ("0.1 s", "< 0.1 s", "1 min 5 s"), as on the task screen: it said "83ms"
  const duration = (await exec.getByRole('cell').nth(4).textContent()) ?? '';
  expect(duration).toMatch(/^(< 0\.1 s|\d+\.\d s|\d+ min \d+ s)$/);
  // and stops once none runs (the earlier specs' runs are short scripts, over by now): no read in the next 3.5 s (it
  // follows every 3 s)
  await expect(page.getByRole('table', { name: 'Executions' }).getByText('running', { exact: true })).toHaveCount(0);
  const readsAtEnd = listReads.length;
  await page.waitForTimeout(3_500);
  expect(listReads.length).toBe(readsAtEnd);
  await exec.getByRole('button', { name: /Logs of execution/ }).click();
  const dialog = page.getByRole('dialog', { name: /Logs of ui-manual/ });
  await expect(dialog.getByLabel('Execution logs')).toContainText('hello-from-ui');
  // a long line wraps with the lines after its first indented (a hanging indent: they started at the left edge, as
  // the next line does), so it reads as one line; a short one is one line high, and nothing scrolls sideways
  const execLog = dialog.getByLabel('Execution logs');
  await expect(execLog).toContainText('word60');
  for (const width of [375, 1360]) {
    await page.setViewportSize({ width, height: 800 });
    const starts = await lineStarts(execLog.locator('.exec-line', { hasText: 'word60' }));
    expect(starts.length, `at ${width} px, line starts ${starts.join(', ')}`).toBeGreaterThan(1);
    for (const x of starts.slice(1)) expect(x, `at ${width} px, line starts ${starts.join(', ')}`).toBeGreaterThan((starts[0] ?? 0) + 10);
    expect(await execLog.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  }
  // a short line is one line high: its height over its text's is ~1 (an empty line after it, of its line break, would
  // make it ~2)
  const short = execLog.locator('.exec-line', { hasText: 'hello-from-ui' });
  expect(await lineStarts(short)).toHaveLength(1);
  const linesHigh = await short.evaluate((el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return el.getBoundingClientRect().height / Math.max(...[...range.getClientRects()].map((r) => r.height));
  });
  expect(linesHigh).toBeLessThan(1.5);
  await screenshot(page, 'scheduler-logs');
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await screenshot(page, 'scheduler');
});

test('a long execution log opens at its first 2,000 lines and shows the rest on request', async ({ page }) => {
  await svcApi('scheduler', 'POST', '/workflows', { name: 'ui-long-log', tasks: [{ name: 'count', type: 'script', script: 'seq 1 2500' }] });
  const run = await svcApi<{ executionId: string }>('scheduler', 'POST', '/workflows/ui-long-log/run');
  await expect(async () => {
    const e = await svcApi<{ status: string }>('scheduler', 'GET', `/executions/${run.executionId}`);
    expect(e.status).toBe('completed');
  }).toPass({ timeout: 30_000 });
  const { total } = await svcApi<{ total: number }>('scheduler', 'GET', `/executions/${run.executionId}/logs?limit=1`);
  expect(total).toBeGreaterThanOrEqual(2500);
  await page.goto('/scheduler');
  await page.getByRole('table', { name: 'Executions' }).locator('tr', { hasText: 'ui-long-log' }).first().getByRole('button', { name: /Logs of execution/ }).click();
  const dialog = page.getByRole('dialog', { name: /Logs of ui-long-log/ });
  const log = dialog.getByLabel('Execution logs');
  await expect(dialog).toContainText(`Showing the first 2,000 of ${total.toLocaleString('en-US')} lines.`);
  await screenshot(page, 'scheduler-logs-long');
  await expect(log).not.toContainText(/INFO 2500$/m);
  await dialog.getByRole('button', { name: `Show ${(total - 2000).toLocaleString('en-US')} more` }).click();
  await expect(log).toContainText(/INFO 2500$/m);
  await expect(dialog).not.toContainText('Showing the first');
  expect((await log.textContent())?.split('\n')).toHaveLength(total);
});

test("two rows' actions on their way at once: each button stays off until its own answer (the first came back on)", async ({ page }) => {
  for (const name of ['ui-twin-a', 'ui-twin-b']) await svcApi('scheduler', 'POST', '/workflows', { name, tasks: [{ name: 'say', type: 'script', script: `echo ${name}` }] });
  await page.goto('/scheduler');
  const answer = await holdAnswers(page, /\/svc\/scheduler\/api\/v1\/workflows\/ui-twin-[ab]\/run$/);
  const runA = page.getByRole('button', { name: 'Run ui-twin-a now' });
  const runB = page.getByRole('button', { name: 'Run ui-twin-b now' });
  await runA.click();
  await expect(runA).toBeDisabled();
  await runB.click();
  await expect(runB).toBeDisabled();
  await expect(runA).toBeDisabled();
  answer();
  await expect(runA).toBeEnabled();
  await expect(runB).toBeEnabled();
  // one run each reached the scheduler
  const { executions } = await svcApi<{ executions: { workflow: string }[] }>('scheduler', 'GET', '/executions?limit=50');
  expect(executions.filter((e) => e.workflow === 'ui-twin-a')).toHaveLength(1);
  expect(executions.filter((e) => e.workflow === 'ui-twin-b')).toHaveLength(1);
});

test.describe('the scheduler service down', () => {
  // the 503s arranged below are logged by the browser as failed loads
  test.use({ allowConsoleErrors: /status of 503/ });

  test('its outage is said once for the screen (it was said in each of the four sections), and the screen loads by itself once it is back', async ({ page }) => {
    await svcApi('scheduler', 'POST', '/workflows', { name: 'ui-after-outage', tasks: [{ name: 'say', type: 'script', script: 'echo back' }] });
    const lists = /\/svc\/scheduler\/api\/v1\/(sources|workflows|schedules|executions)(\?.*)?$/;
    let triesOfSources = 0;
    await page.route(lists, (route) => {
      if (route.request().url().includes('/sources')) triesOfSources++;
      return route.fulfill({ status: 503, json: { detail: 'The database (PostgreSQL) is not answering; try again' } });
    });
    // every state the page goes through: how many sections show their list, how many say "Not loaded", whether the
    // screen's error is there
    await page.addInitScript(() => {
      const w = window as unknown as { seen: string[] };
      w.seen = [];
      const look = () => {
        const sections = [...document.querySelectorAll('section.panel')];
        if (sections.length === 0) return;
        const shown = sections.filter((s) => s.querySelector('table, p.empty')).length;
        const notLoaded = sections.filter((s) => s.textContent?.includes('Not loaded')).length;
        const errors = document.querySelectorAll('[role="alert"]').length;
        const state = `${shown} shown, ${notLoaded} not loaded, ${errors} error`;
        if (w.seen.at(-1) !== state) w.seen.push(state);
      };
      document.addEventListener('DOMContentLoaded', () => new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true }));
    });
    await page.clock.install();
    await page.goto('/scheduler');
    const alerts = page.getByRole('alert');
    // the screen's tries (1 and 2 s apart, then every 5 s) on a clock 10 times as fast (hurried)
    await hurried(page, () =>
      expect(alerts.filter({ hasText: 'The scheduler service is unavailable (HTTP 503). This screen tries again every 5 seconds by itself.' })).toHaveCount(1, {
        timeout: 20_000,
      }),
    );
    await expect(alerts.filter({ hasText: 'The database (PostgreSQL) is not answering' })).toHaveCount(1);
    for (const name of ['Sources', 'Workflows', 'Schedules', 'Executions']) {
      const section = page.getByRole('region', { name });
      await expect(section.getByText('Not loaded: the scheduler service is unavailable (above).')).toBeVisible();
      await expect(section.getByRole('alert')).toHaveCount(0);
    }
    await screenshot(page, 'scheduler-outage');
    // the screen's own tries (the first read, tried twice more, then again every 5 s): one more round, refused too
    await hurried(page, async () => {
      const firstRound = triesOfSources;
      await expect.poll(() => triesOfSources, { timeout: 20_000 }).toBeGreaterThanOrEqual(firstRound + 3);
      await expect(alerts).toHaveCount(1);
      // back: the next try (every 5 s) loads every list, with nobody clicking Retry
      await page.unroute(lists);
      await expect(page.getByRole('table', { name: 'Workflows' }).locator('[data-workflow="ui-after-outage"]')).toBeVisible({ timeout: 15_000 });
    });
    await expect(page.getByRole('alert')).toHaveCount(0);
    await expect(page.getByText('Not loaded: the scheduler service is unavailable (above).')).toHaveCount(0);
    // all together, from the one read that found the service back (each list came back on its own 5 s timer, so some
    // showed while the others still said "Not loaded", and moved when those came); and while the service was down,
    // its error and the "Not loaded" stayed through each try (they blinked away, "Loading…" in their place, each time)
    expect(await page.evaluate(() => (window as unknown as { seen: string[] }).seen)).toEqual([
      '0 shown, 0 not loaded, 0 error',
      '0 shown, 4 not loaded, 1 error',
      '4 shown, 0 not loaded, 0 error',
    ]);
  });

  test("a row's action refused with a 503 says which service and that nothing is sent again by itself (a bare toast before)", async ({ page }) => {
    await svcApi('scheduler', 'POST', '/workflows', {
      name: 'ui-pause-outage',
      schedule: '0 4 * * *',
      timezone: 'UTC',
      tasks: [{ name: 'say', type: 'script', script: 'echo paused' }],
    });
    await page.goto('/scheduler');
    const row = page.getByRole('table', { name: 'Schedules' }).locator('[data-schedule="ui-pause-outage"]');
    await expect(row).toContainText('active');
    await page.route(/\/svc\/scheduler\/api\/v1\/schedules\/ui-pause-outage\/pause$/, (route) =>
      route.fulfill({ status: 503, json: { detail: 'The database (PostgreSQL) is not answering; try again' } }),
    );
    await row.getByRole('button', { name: 'Pause ui-pause-outage' }).click();
    const toast = page.locator('.toast').filter({ hasText: 'The database (PostgreSQL) is not answering' });
    await expect(toast).toHaveRole('alert');
    await expect(toast).toContainText('The scheduler service is unavailable (HTTP 503). Nothing is sent again by itself: try again once it is back.');
    await screenshot(page, 'scheduler-action-unavailable');
    // nothing was paused, and the button is back for the try once it is back
    await expect(row).toContainText('active');
    await expect(row.getByRole('button', { name: 'Pause ui-pause-outage' })).toBeEnabled();
    const s = (await svcApi<{ schedules: Schedule[] }>('scheduler', 'GET', '/schedules')).schedules.find((x) => x.workflow === 'ui-pause-outage');
    expect(s?.enabled).toBe(true);
  });
});

test('the tables show once every list has come: a list that came late no longer moves the buttons of the others', async ({ page }) => {
  await svcApi('scheduler', 'POST', '/workflows', { name: 'ui-steady', tasks: [{ name: 'say', type: 'script', script: 'echo steady' }] });
  const fake = await startFakeFlowBuilder();
  try {
    await svcApi('scheduler', 'POST', '/sources', { name: 'ui-steady-src', source_type: 'flow-builder', url: fake.url });
    const answerSources = await holdAnswers(page, /\/svc\/scheduler\/api\/v1\/sources(\?.*)?$/);
    await page.goto('/scheduler');
    // the workflows have come, the sources (above them) not: their Run now would move down when the sources come
    await expect(page.getByRole('status', { name: 'Workflows: loading' })).toHaveText('Loading…');
    await expect(page.getByRole('status', { name: 'Sources: loading' })).toHaveText('Loading…');
    await expect(page.getByRole('button', { name: 'Run ui-steady now' })).toHaveCount(0);
    answerSources();
    const run = page.getByRole('button', { name: 'Run ui-steady now' });
    await expect(page.getByRole('table', { name: 'Sources' }).locator('[data-source="ui-steady-src"]')).toBeVisible();
    await expect(run).toBeVisible();
    await expect(page.getByRole('status', { name: /: loading$/ })).toHaveCount(0);
  } finally {
    await fake.close();
  }
});

test.describe('the scheduler service refusing or failing: one error for the screen, saying what to do', () => {
  test.use({ allowConsoleErrors: /status of (401|403|500)/ });
  const lists = /\/svc\/scheduler\/api\/v1\/(sources|workflows|schedules|executions)(\?.*)?$/;
  const sections = ['Sources', 'Workflows', 'Schedules', 'Executions'];

  test("its 401 (it refused the task service's key) names the setting to fix, once, and asks for no key here", async ({ page }) => {
    // what the scheduler answers a wrong X-API-Key (api/http/apiKeyAuth.ts)
    await page.route(lists, (route) => route.fulfill({ status: 401, json: { detail: 'Invalid API key' } }));
    await page.goto('/scheduler');
    const alerts = page.getByRole('alert');
    await expect(alerts).toHaveCount(1);
    await expect(alerts).toContainText('Invalid API key');
    await expect(alerts).toContainText("The scheduler service refused the key the task service sends it (HTTP 401): the key of this tab is fine.");
    await expect(alerts).toContainText('set ARMADA_SCHEDULER_API_KEY (or ARMADA_API_KEY, which the three services share)');
    // the tab's key was accepted: the key prompt (which asked for it again) stays closed, and Retry does not open it
    await expect(alerts).not.toContainText('Retry asks for it');
    await expect(page.getByRole('dialog', { name: 'API key required' })).toHaveCount(0);
    for (const name of sections) {
      await expect(page.getByRole('region', { name }).getByText("Not loaded: the scheduler service refused the task service's key (above).")).toBeVisible();
    }
    await screenshot(page, 'scheduler-key-refused');
    await page.getByRole('button', { name: 'Retry' }).click();
    await expect(page.getByRole('dialog', { name: 'API key required' })).toHaveCount(0);
    await expect(alerts).toHaveCount(1);
  });

  test('its 403 and its 500 on every list: said once, with what to do (it was said in each of the four sections)', async ({ page }) => {
    await page.route(lists, (route) => route.fulfill({ status: 403, json: { detail: 'Forbidden by the gateway' } }));
    await page.clock.install();
    await page.goto('/scheduler');
    const alerts = page.getByRole('alert');
    await expect(alerts).toHaveCount(1);
    await expect(alerts).toContainText('Forbidden by the gateway');
    await expect(alerts).toContainText('The scheduler service refused this request to the key this tab sends (HTTP 403): use a key that is allowed to do it (Settings, API key).');
    for (const name of sections) await expect(page.getByRole('region', { name }).getByText('Not loaded: the scheduler service refused the request (above).')).toBeVisible();

    await page.unroute(lists);
    await page.route(lists, (route) => route.fulfill({ status: 500, json: { detail: 'Internal server error' } }));
    await page.getByRole('button', { name: 'Retry' }).click();
    // a 500 is tried twice more (1 and 2 s apart) before it is said: on a clock 10 times as fast (hurried)
    await hurried(page, () => expect(alerts.filter({ hasText: 'The scheduler service failed on this request (HTTP 500): its log on the server says why.' })).toHaveCount(1));
    await expect(alerts).toHaveCount(1);
    await expect(alerts).not.toContainText('could not be read');
    for (const name of sections) await expect(page.getByRole('region', { name }).getByText('Not loaded: the scheduler service answered HTTP 500 (above).')).toBeVisible();
    await screenshot(page, 'scheduler-failing');
  });

  test('a 500 of two lists is said once, naming them; the other two lists show', async ({ page }) => {
    await svcApi('scheduler', 'POST', '/workflows', { name: 'ui-half-failing', tasks: [{ name: 'say', type: 'script', script: 'echo half' }] });
    await page.route(/\/svc\/scheduler\/api\/v1\/(sources|executions)(\?.*)?$/, (route) => route.fulfill({ status: 500, json: { detail: 'Internal server error' } }));
    await page.clock.install();
    await page.goto('/scheduler');
    const alerts = page.getByRole('alert');
    // a 500 is tried twice more (1 and 2 s apart) before it is said: on a clock 10 times as fast (hurried)
    await hurried(page, () => expect(alerts.filter({ hasText: 'Sources and Executions could not be read: Internal server error' })).toHaveCount(1));
    await expect(alerts).toHaveCount(1);
    await expect(page.getByRole('table', { name: 'Workflows' }).locator('[data-workflow="ui-half-failing"]')).toBeVisible();
    await expect(page.getByRole('region', { name: 'Schedules' }).getByText('Not loaded')).toHaveCount(0);
    for (const name of ['Sources', 'Executions']) await expect(page.getByRole('region', { name }).getByText('Not loaded: the scheduler service answered HTTP 500 (above).')).toBeVisible();
    await page.unroute(/\/svc\/scheduler\/api\/v1\/(sources|executions)(\?.*)?$/);
    await page.getByRole('button', { name: 'Retry' }).click();
    await expect(alerts).toHaveCount(0);
    await expect(page.getByText('Not loaded')).toHaveCount(0);
  });
});
