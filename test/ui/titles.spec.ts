/**
 * Every screen names itself in the tab's title ("Fix login bug · Armada"), so its tabs and the browser's history can
 * be told apart: only the board set one, every other screen left "Armada".
 */
import { api, createProject, expect, holdAnswers, test } from './fixtures';

// the not-found addresses are answered 404, which the browser logs as a failed resource
test.use({ allowConsoleErrors: /status of 404/ });

test('each screen sets its own tab title, and the history keeps them apart', async ({ page }) => {
  const project = await createProject(`Titled project ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Fix login bug' });
  const screens: [string, string, string][] = [
    ['/projects', 'Projects', 'Projects · Armada'],
    [`/projects/${project.id}`, project.name, `${project.name} · Armada`],
    [`/tasks/${task.id}`, 'Fix login bug', 'Fix login bug · Armada'],
    ['/approvals', 'Approvals', 'Approvals · Armada'],
    ['/scheduler', 'Scheduler', 'Scheduler · Armada'],
    ['/agents', 'Agents', 'Agents · Armada'],
    ['/traces', 'Message traces', 'Message traces · Armada'],
    ['/settings', 'Settings', 'Settings · Armada'],
    ['/nope', 'Not found', 'Not found · Armada'],
    [`/tasks/${project.id}`, 'Task not found', 'Task not found · Armada'],
  ];
  for (const [path, heading, title] of screens) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1, name: heading, exact: true })).toBeVisible();
    await expect(page, path).toHaveTitle(title);
  }
  expect(new Set(screens.map(([, , title]) => title)).size).toBe(screens.length);

  // moving through the app without a reload: each screen's title replaces the last, and Back brings each one back
  await page.goto('/projects');
  const nav = page.getByRole('navigation', { name: 'Main' });
  await page.getByRole('link', { name: project.name }).click();
  await expect(page).toHaveTitle(`${project.name} · Armada`);
  await page.getByRole('link', { name: 'Fix login bug' }).click();
  await expect(page).toHaveTitle('Fix login bug · Armada');
  for (const name of ['Approvals', 'Scheduler', 'Agents', 'Traces', 'Settings']) {
    await nav.getByRole('link', { name, exact: true }).click();
    await expect(page).toHaveTitle(`${name === 'Traces' ? 'Message traces' : name} · Armada`);
  }
  for (const title of ['Message traces', 'Agents', 'Scheduler', 'Approvals', 'Fix login bug', project.name, 'Projects']) {
    await page.goBack();
    await expect(page).toHaveTitle(`${title} · Armada`);
  }
});

test('a task loading says so in its tab, then its title', async ({ page }) => {
  const project = await createProject(`Task title ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Write release notes' });
  const answer = await holdAnswers(page, new RegExp(`/api/tasks/${task.id}$`));
  await page.goto(`/tasks/${task.id}`);
  await expect(page).toHaveTitle('Loading task… · Armada');
  answer();
  await expect(page).toHaveTitle('Write release notes · Armada');
});
