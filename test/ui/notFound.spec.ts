/**
 * Addresses the board does not have: an unknown top-level path gets the board's own not-found screen (served by the
 * task service with a 404, public like the board's files), while /api keeps its JSON 404; an unknown project's
 * address says the project is not found and offers nothing to do on it; so does an unknown task's.
 */
import { randomUUID } from 'node:crypto';
import { api, BASE_URL, expect, KEYS, test } from './fixtures';
import { screenshot } from './screenshot';

// the 404s are logged by the browser as failed resources
test.use({ allowConsoleErrors: /status of 404/ });

test('an unknown address shows the board\'s not-found screen with a way back; /api answers JSON 404 still', async ({ page }) => {
  for (const address of ['/nope', '/nope/deeper?x=1']) {
    const res = await page.goto(address);
    expect(res?.status(), address).toBe(404);
    expect(res?.headers()['content-type'], address).toMatch(/^text\/html/);
    await expect(page.getByRole('heading', { name: 'Not found', level: 1 })).toBeVisible();
    await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
    await expect(page.getByText('{"success":false')).toHaveCount(0);
  }
  await screenshot(page, 'not-found');
  await page.getByRole('link', { name: 'Go to the projects' }).click();
  await expect(page).toHaveURL(/\/projects$/);
  await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();

  // the API and anything that does not ask for HTML keep the API's JSON 404
  const html = 'text/html,application/xhtml+xml,*/*;q=0.8';
  const auth = `Bearer ${KEYS.task}`;
  for (const [path, accept] of [
    ['/api/nope', html],
    ['/ws/nope', html],
    ['/nope', 'application/json'],
    ['/nope', '*/*'],
  ]) {
    const r = await fetch(`${BASE_URL}${path}`, { headers: { accept, authorization: auth } });
    expect({ path, accept, status: r.status, type: r.headers.get('content-type') }).toEqual({ path, accept, status: 404, type: expect.stringMatching(/^application\/json/) });
    expect(await r.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  }
});

test('an unknown project\'s address says so, with a way back and no New task', async ({ page }) => {
  const id = randomUUID();
  await page.goto(`/projects/${id}`);
  await expect(page.getByRole('heading', { name: 'Project not found', level: 1 })).toBeVisible();
  await expect(page.getByText(`There is no project ${id}`)).toBeVisible();
  await expect(page.getByRole('button', { name: 'New task' })).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Apply template' })).toHaveCount(0);
  await expect(page.getByLabel('Search')).toHaveCount(0);
  await expect(page.getByTestId('board')).toHaveCount(0);
  // said once, on the screen: no toast and no error banner beside it
  await expect(page.getByRole('alert')).toHaveCount(0);
  await screenshot(page, 'project-not-found');
  await expect(api('GET', `/projects/${id}`)).rejects.toThrow(/404/);
  await page.getByRole('link', { name: 'Go to the projects' }).click();
  await expect(page).toHaveURL(/\/projects$/);
  await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
});

test('an unknown task\'s address shows the same not-found screen, with a way back and no error banner', async ({ page }) => {
  for (const id of [randomUUID(), 'no-such-task']) {
    await page.goto(`/tasks/${id}`);
    await expect(page.getByRole('heading', { name: 'Task not found', level: 1 })).toBeVisible();
    await expect(page.getByText(`There is no task ${id}`)).toBeVisible();
    await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
    // said once, on the screen: no error banner (it showed "Task … not found" with a Retry) and no toast
    await expect(page.getByRole('alert')).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Retry' })).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Start attempt…' })).toHaveCount(0);
    await expect(api('GET', `/tasks/${id}`)).rejects.toThrow(/404/);
  }
  await screenshot(page, 'task-not-found');
  await page.getByRole('link', { name: 'Go to the projects' }).click();
  await expect(page).toHaveURL(/\/projects$/);
  await expect(page.getByRole('heading', { name: 'Projects', level: 1 })).toBeVisible();
});
