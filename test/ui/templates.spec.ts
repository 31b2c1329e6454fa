/** Apply a task template on a board; create a project from a repository URL (cloned by a worker). */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { api, createProject, expect, holdAnswers, makeRepo, REPOS, test } from './fixtures';
import { screenshot } from './screenshot';

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
  // while the list is on its way the dialog says so (it showed only Cancel and a pale Apply)
  const answer = await holdAnswers(page, /\/api\/task-templates\?/);
  await page.getByRole('button', { name: 'Apply template' }).click();
  const dialog = page.getByRole('dialog', { name: 'Apply a template' });
  await expect(dialog.getByRole('status')).toHaveText('Loading templates…');
  await expect(dialog.getByRole('button', { name: 'Apply' })).toBeDisabled();
  answer();
  await expect(dialog.getByRole('status')).toHaveCount(0);
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

test.describe('a template deleted while the Apply dialog is open', () => {
  // the refused apply (404) is logged by the browser as a failed resource
  test.use({ allowConsoleErrors: /status of 404/ });

  test('Apply says so in the dialog, not in a toast behind it, and the list drops the template', async ({ page }) => {
    const project = await createProject('Template Gone Board');
    const doomed = await api<{ id: string }>('POST', '/task-templates', { name: 'Doomed checklist', description: 'deleted while shown', category: 'release', tasks: [{ title: 'Never added', description: '', order: 1 }] });
    await page.goto(`/projects/${project.id}`);
    await expect(page.getByTestId('board')).toBeVisible();
    await page.getByRole('button', { name: 'Apply template' }).click();
    const dialog = page.getByRole('dialog', { name: 'Apply a template' });
    const select = dialog.getByLabel('Template');
    await select.selectOption(doomed.id);
    // deleted in another tab, or through the API, while this dialog shows it
    await api('DELETE', `/task-templates/${doomed.id}`);
    await dialog.getByRole('button', { name: 'Apply' }).click();
    await expect(dialog.getByRole('alert')).toHaveText(`Task template ${doomed.id} not found`);
    // said once, where the user looks: no toast under the dialog's backdrop
    await expect(page.getByRole('alert')).toHaveCount(1);
    await expect(select.locator('option', { hasText: 'Doomed checklist' })).toHaveCount(0);
    await screenshot(page, 'board-template-gone');
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    expect(await api('GET', `/projects/${project.id}/tasks`)).toEqual([]);
  });
});
