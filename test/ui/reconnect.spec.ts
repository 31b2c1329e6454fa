/**
 * A lost stream: the board says whose live updates were lost ("Live updates from the task service lost —
 * reconnecting…"), what is not updating and what to check if it lasts, reconnects by itself and resumes after the last
 * event it saw (/ws/events?after=<seq>), so a task created while it was away still appears, once. A screen that could
 * not load while PostgreSQL was frozen (SIGSTOP, a real outage) loads again by itself once the stream is back.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { WebSocketRoute } from '@playwright/test';
import { api, BASE_URL, createProject, expect, KEYS, test } from './fixtures';
import { screenshot } from './screenshot';

test('the board reconnects after a dropped stream and catches up on what it missed', async ({ page }) => {
  const project = await createProject('Reconnect Board');
  const sockets: WebSocketRoute[] = [];
  const urls: string[] = [];
  let refuse = false;
  await page.routeWebSocket(/\/ws\/events/, (ws) => {
    urls.push(ws.url());
    if (refuse) {
      ws.close({ code: 4000, reason: 'test: network down' });
      return;
    }
    ws.connectToServer();
    sockets.push(ws);
  });
  await page.goto(`/projects/${project.id}`);
  await api('POST', '/tasks', { projectId: project.id, title: 'Before the drop' });
  await expect(page.getByRole('article', { name: 'Before the drop' })).toBeVisible();

  // the network goes away: the open socket closes and new ones are refused for a while
  refuse = true;
  await sockets[0]?.close({ code: 4000, reason: 'test: dropped' });
  // which service's live updates, what on the screen stopped, and what to do if it lasts (it said only "Connection
  // lost — reconnecting…")
  const banner = page.getByTestId('connection-banner');
  await expect(banner.getByText('Live updates from the task service lost — reconnecting…', { exact: true })).toBeVisible();
  await expect(banner).toContainText(/Not updating since \d{1,2}:\d{2}:\d{2}.*: changes to this project's tasks\./);
  await expect(banner).toContainText('it catches up by itself then, with no reload');
  await expect(banner).toContainText('If this lasts, check that Armada is running (armada status on its host)');
  await expect(banner).toContainText('passes WebSocket upgrades on /ws');
  await screenshot(page, 'connection-lost', { fullPage: false });
  await api('POST', '/tasks', { projectId: project.id, title: 'Created while away' });
  // at least one retry is refused first (urls[0] is the first open; every retry since adds one, refused meanwhile)
  await expect.poll(() => urls.length).toBeGreaterThanOrEqual(2);
  refuse = false;

  await expect(page.getByRole('article', { name: 'Created while away' })).toBeVisible({ timeout: 15_000 });
  await expect(banner).toBeHidden();
  await expect(page.getByRole('article', { name: 'Created while away' })).toHaveCount(1);
  await expect(page.locator('[data-column="todo"] .count')).toHaveText('2');
  // the reconnect asked for the events after the last one seen
  expect(urls[0]).not.toContain('after=');
  expect(urls.at(-1)).toMatch(/[?&]after=\d+/);
});

test.describe('a screen whose code cannot be fetched (the server went away after the page loaded)', () => {
  // the refused chunk and the route error are logged by the browser
  test.use({ allowConsoleErrors: /./ });

  test('says so in its place, under a navigation that keeps working, and Reload brings it', async ({ page }) => {
    await page.goto('/projects');
    await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
    // the Scheduler's code is fetched on first visit (routes.tsx): the connection is refused, as by a server that is down
    const chunk = /\/assets\/SchedulerPage-[^/]*\.js$/;
    await page.route(chunk, (route) => route.abort('connectionrefused'));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Scheduler' }).click();
    // before: React Router's bare "Unexpected Application Error!" page, with no navigation
    await expect(page.getByRole('heading', { name: 'This screen could not be loaded', level: 1 })).toBeVisible();
    await expect(page.getByRole('alert')).toContainText('Its code did not arrive from the Armada server');
    // and so does the tab (it said only "Armada")
    await expect(page).toHaveTitle('This screen could not be loaded · Armada');
    await screenshot(page, 'screen-not-loaded', { fullPage: false });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Projects' }).click();
    await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
    await page.goBack();
    await expect(page.getByRole('heading', { name: 'This screen could not be loaded', level: 1 })).toBeVisible();
    // the server is back: Reload shows the screen
    await page.unroute(chunk);
    await page.getByRole('button', { name: 'Reload' }).click();
    await expect(page.getByRole('heading', { name: 'Scheduler', level: 1 })).toBeVisible();
  });
});

/** SIGSTOP of the suite's embedded PostgreSQL (the postmaster and its backends): a hung database, nothing answers. */
function freezePostgres(): () => void {
  const home = process.env.ARMADA_UI_HOME as string;
  const pid = Number(fs.readFileSync(path.join(home, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const frozen = [pid, ...fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
  for (const p of frozen) process.kill(p, 'SIGSTOP');
  let thawed = false;
  return () => {
    if (thawed) return;
    thawed = true;
    for (const p of frozen) {
      try {
        process.kill(p, 'SIGCONT');
      } catch {
        /* gone meanwhile */
      }
    }
  };
}

test.describe('a screen that failed to load during a database outage', () => {
  // the 503s of the outage and the refused sockets are logged by the browser
  test.use({ allowConsoleErrors: /503|WebSocket|Failed to load resource/ });

  test('loads again by itself once the live stream is back (Projects and Approvals), no Retry click', async ({ page }) => {
    test.setTimeout(150_000);
    const project = await createProject('Outage Recovered Project');
    const approvals = await page.context().newPage();
    await approvals.addInitScript((key) => window.sessionStorage.setItem('armada.apiKey', key), KEYS.task);
    const thaw = freezePostgres();
    try {
      // once the service knows (its probes), it answers 503 at once and refuses new streams (a request that got a
      // pooled connection first waits for the frozen server: given up after 3 s)
      const projectsStatus = () =>
        fetch(`${BASE_URL}/api/projects`, { headers: { authorization: `Bearer ${KEYS.task}` }, signal: AbortSignal.timeout(3_000) }).then(
          (r) => r.status,
          () => 0,
        );
      await expect.poll(projectsStatus, { timeout: 60_000, intervals: [250], message: 'the API answers 503 once PostgreSQL is frozen' }).toBe(503);
      await page.goto('/projects');
      await approvals.goto('/approvals');
      await expect(page.getByRole('alert').filter({ hasText: 'PostgreSQL' })).toBeVisible({ timeout: 30_000 });
      await expect(approvals.getByRole('alert').filter({ hasText: 'PostgreSQL' }).first()).toBeVisible({ timeout: 30_000 });
      await expect(page.getByText('Live updates from the task service lost — reconnecting…')).toBeVisible({ timeout: 15_000 });
      await expect(page.getByTestId('connection-banner')).toContainText('task and approval events');
    } finally {
      thaw();
    }
    await expect.poll(async () => (await fetch(`${BASE_URL}/health`)).status, { timeout: 60_000, intervals: [250] }).toBe(200);
    // the stream reconnects (backoff up to 10 s) and the screens read their data again, with nobody clicking Retry
    await expect(page.getByTestId('connection-banner')).toBeHidden({ timeout: 30_000 });
    await expect(page.getByRole('row').filter({ hasText: project.name })).toBeVisible({ timeout: 15_000 });
    await expect(page.getByRole('alert').filter({ hasText: 'PostgreSQL' })).toHaveCount(0);
    await expect(approvals.getByRole('table', { name: 'Pending approvals' }).or(approvals.getByText('Nothing waits for your answer.'))).toBeVisible({ timeout: 30_000 });
    await expect(approvals.getByRole('alert').filter({ hasText: 'PostgreSQL' })).toHaveCount(0, { timeout: 15_000 });
    await approvals.close();
  });
  test('the Scheduler, which has no stream, names the service that is down, says it retries, and loads by itself', async ({ page }) => {
    test.setTimeout(150_000);
    const project = await createProject('Outage Action Project');
    const thaw = freezePostgres();
    try {
      const schedulerStatus = () =>
        fetch(`${BASE_URL}/svc/scheduler/api/v1/workflows`, { headers: { authorization: `Bearer ${KEYS.task}` }, signal: AbortSignal.timeout(3_000) }).then(
          (r) => r.status,
          () => 0,
        );
      await expect.poll(schedulerStatus, { timeout: 60_000, intervals: [250], message: 'the scheduler answers 503 once PostgreSQL is frozen' }).toBe(503);
      await page.goto('/scheduler');
      // one error for the screen, above its four sections (it was shown in each)
      const alert = page.getByRole('alert').filter({ hasText: 'The scheduler service' });
      await expect(alert).toContainText('PostgreSQL', { timeout: 30_000 });
      await expect(alert).toHaveCount(1);
      // which service, and that nobody needs to click: before, the error stayed until Retry (no stream brings it back)
      await expect(alert).toContainText('The scheduler service is unavailable (HTTP 503). This screen tries again every 5 seconds by itself.');
      await screenshot(page, 'scheduler-unavailable');
      // an action is not sent again by itself, and its error in the dialog says that instead (it said the screen retried)
      await page.goto(`/projects/${project.id}`);
      await page.getByRole('button', { name: 'New task' }).click();
      const dialog = page.getByRole('dialog', { name: 'New task' });
      await dialog.getByLabel('Title').fill('Typed during the outage');
      await dialog.getByLabel('Title').press('Enter');
      await expect(dialog.getByRole('alert')).toContainText('The task service is unavailable (HTTP 503). Nothing is sent again by itself: try again once it is back.', {
        timeout: 30_000,
      });
      await page.keyboard.press('Escape');
      await page.goto('/scheduler');
    } finally {
      thaw();
    }
    await expect(page.getByRole('table', { name: 'Workflows' }).or(page.getByText(/^No workflows\./))).toBeVisible({ timeout: 60_000 });
    await expect(page.getByRole('table', { name: 'Executions' }).or(page.getByText(/^No executions yet\./))).toBeVisible({ timeout: 15_000 });
    await expect(page.getByRole('alert')).toHaveCount(0, { timeout: 15_000 });
  });
});
