/**
 * The page frame and what every screen shares: the board's title while its project loads (and the tab's title), money
 * written one way, a skip link for keyboard users, and the brand link navigating in the app.
 */
import { api, createProject, expect, holdAnswers, test } from './fixtures';
import { screenshot } from './screenshot';

test('a board loading says so in a neutral title ("Board" came first, then the name), and the tab\'s title follows', async ({ page }) => {
  const project = await createProject(`Title follows ${Date.now()}`);
  // every level-1 heading the page shows, from its first frame
  await page.addInitScript(() => {
    const w = window as unknown as { headings: string[] };
    w.headings = [];
    const look = () => {
      const h = document.querySelector('h1')?.textContent ?? '';
      if (h && w.headings.at(-1) !== h) w.headings.push(h);
    };
    document.addEventListener('DOMContentLoaded', () => new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true }));
  });
  const answer = await holdAnswers(page, new RegExp(`/api/projects/${project.id}$`));
  await page.goto(`/projects/${project.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Loading project…');
  await expect(page).toHaveTitle('Loading project… · Armada');
  await screenshot(page, 'board-title-loading');
  answer();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(project.name);
  await expect(page).toHaveTitle(`${project.name} · Armada`);
  expect(await page.evaluate(() => (window as unknown as { headings: string[] }).headings)).toEqual(['Loading project…', project.name]);
  // another screen gives the tab its own title
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
  await expect(page.getByRole('heading', { name: 'Settings', level: 1 })).toBeVisible();
  await expect(page).toHaveTitle('Settings · Armada');
});

test('cost is written the same on Projects and on the task page: "$0.00" (the task page said "$0.0000")', async ({ page }) => {
  const project = await createProject(`Money one way ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'What it cost' });
  await page.goto('/projects');
  await expect(page.locator('tr', { hasText: project.name }).locator('td.num').last()).toHaveText('$0.00');
  await page.goto(`/tasks/${task.id}`);
  const attempts = page.getByRole('region', { name: 'Attempts' });
  await expect(attempts).toContainText('0 total · 0 completed · 0 failed · $0.00');
  await expect(page.getByText('$0.0000')).toHaveCount(0);
});

test('Tab first reaches "Skip to content", shown while focused, which moves focus past the navigation to the screen', async ({ page }) => {
  await page.goto('/projects');
  await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
  const skip = page.getByRole('link', { name: 'Skip to content' });
  // out of sight until focused
  expect((await skip.boundingBox())?.y ?? 0).toBeLessThan(0);
  await page.keyboard.press('Tab');
  await expect(skip).toBeFocused();
  const box = await skip.boundingBox();
  expect(box?.y).toBeGreaterThanOrEqual(0);
  expect(box?.height).toBeGreaterThan(10);
  await screenshot(page, 'skip-link');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('main')).toBeFocused();
  await expect(page).toHaveURL(/\/projects$/);
  // the next Tab is inside the screen, not on one of the seven links above it
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => !!document.activeElement?.closest('main'))).toBe(true);
});

test('the Armada brand link navigates in the app (it reloaded the whole page)', async ({ page }) => {
  await page.goto('/settings');
  await expect(page.getByRole('heading', { name: 'Settings', level: 1 })).toBeVisible();
  await page.evaluate(() => {
    (window as unknown as { notReloaded: boolean }).notReloaded = true;
  });
  await page.getByRole('link', { name: 'Armada', exact: true }).click();
  await expect(page).toHaveURL(/\/projects$/);
  await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
});

test.describe('titles', () => {
  // the not-found address is answered 404, which the browser logs as a failed resource
  test.use({ allowConsoleErrors: /status of 404/ });

  test("a screen's title stands at the same height on every screen of the navigation and on the not-found one (it sat 4 px lower beside a button; not found's 4 px higher)", async ({ page }) => {
    const tops: Record<string, number | undefined> = {};
    for (const [path, heading] of [
      ['/projects', 'Projects'],
      ['/approvals', 'Approvals'],
      ['/scheduler', 'Scheduler'],
      ['/agents', 'Agents'],
      ['/traces', 'Message traces'],
      ['/settings', 'Settings'],
      ['/nope', 'Not found'],
    ]) {
      await page.goto(path);
      const h1 = page.getByRole('heading', { name: heading, level: 1 });
      await expect(h1).toBeVisible();
      tops[heading] = (await h1.boundingBox())?.y;
    }
    expect(new Set(Object.values(tops)).size, JSON.stringify(tops)).toBe(1);
  });
});

test("a task's screen marks Projects in the navigation, as its board does (no entry was marked)", async ({ page }) => {
  const project = await createProject(`Nav mark ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Marked' });
  const projects = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Projects' });
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('heading', { name: 'Marked', level: 1 })).toBeVisible();
  await expect(projects).toHaveClass('active');
  await page.goto('/settings');
  await expect(page.getByRole('heading', { name: 'Settings', level: 1 })).toBeVisible();
  await expect(projects).not.toHaveClass('active');
});
