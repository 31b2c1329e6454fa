/** Apply a task template on a board; create a project from a repository URL (cloned by a worker). */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { api, createProject, expect, makeRepo, REPOS, test } from './fixtures';

test("apply a template: its tasks appear on the board, in the project's list", async ({ page }) => {
  const project = await createProject('Template Board');
  const template = await api<{ id: string }>('POST', '/task-templates', {
    name: 'Release checklist',
    description: 'what every release needs',
    category: 'release',
    tasks: [
      { title: 'Bump the version', description: '', order: 1 },
      { title: 'Write the changelog', description: '', order: 2 },
    ],
  });
  await page.goto(`/projects/${project.id}`);
  await expect(page.getByTestId('board')).toBeVisible();
  await page.getByRole('button', { name: 'Apply template' }).click();
  const dialog = page.getByRole('dialog', { name: 'Apply a template' });
  await dialog.getByLabel('Template').selectOption(template.id);
  await dialog.getByRole('button', { name: 'Apply' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('article', { name: 'Bump the version' })).toBeVisible();
  await expect(page.getByRole('article', { name: 'Write the changelog' })).toHaveCount(1);
  const tasks = await api<{ title: string }[]>('GET', `/projects/${project.id}/tasks`);
  expect(tasks.map((t) => t.title).sort()).toEqual(['Bump the version', 'Write the changelog']);
});

test('create a project from a repository URL: the board opens and the project list shows it', async ({ page }) => {
  const bare = fs.mkdtempSync(path.join(REPOS, 'armada-ui-bare-'));
  execFileSync('git', ['clone', '-q', '--bare', makeRepo('remote'), bare]);
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByRole('button', { name: 'Code-hosting URL' }).click();
  await dialog.getByLabel('Repository URL').fill(`file://${bare}`);
  await dialog.getByLabel('Name').fill('Cloned From A URL');
  await dialog.getByRole('button', { name: 'Create project' }).click();
  await expect(page.getByRole('heading', { name: 'Cloned From A URL' })).toBeVisible();
  await page.getByRole('link', { name: 'Projects' }).first().click();
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Cloned From A URL' }) });
  await expect(row).toContainText(`file://${bare}`);
  const id = (await row.getByRole('link', { name: 'Cloned From A URL' }).getAttribute('href'))?.split('/').pop() as string;
  await expect.poll(async () => (await api<{ repository: { status: string } }>('GET', `/projects/${id}`)).repository.status, { timeout: 60_000, intervals: [250] }).toBe('ready');
});
