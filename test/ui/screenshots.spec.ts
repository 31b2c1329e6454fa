/**
 * Screenshots of the screens for docs/ui.md, written to docs/ui/*.png on every run (so they show the board as it
 * is). Each screen is arranged with a little realistic data first.
 */
import path from 'node:path';
import { api, createProject, expect, test } from './fixtures';

const DOCS = path.join(__dirname, '..', '..', 'docs', 'ui');

test('screenshots of the Projects and Board screens', async ({ page }) => {
  // the suite is shared: other tests' projects would fill the list, so the screenshots start from an empty one
  for (const p of await api<{ id: string }[]>('GET', '/projects?limit=100')) await api('DELETE', `/projects/${p.id}`);
  const project = await createProject('Payments Service');
  await createProject('Mobile App');
  const tasks: [string, string, string, string[], string | undefined][] = [
    ['Retry failed card captures with backoff', 'pending', 'high', ['bug'], 'ann'],
    ['Add idempotency keys to refunds', 'pending', 'medium', ['feature'], undefined],
    ['Document the webhook signature check', 'pending', 'low', ['docs'], 'ben'],
    ['Migrate ledger to numeric(20,4)', 'in_progress', 'critical', ['db'], 'ann'],
    ['Split the checkout controller', 'in_progress', 'medium', ['refactor'], 'ben'],
    ['Rate-limit the public quote API', 'review', 'high', ['security'], 'cam'],
    ['Fix rounding in multi-currency totals', 'completed', 'high', ['bug'], 'ann'],
    ['Upgrade the PDF invoice renderer', 'failed', 'medium', ['deps'], undefined],
    ['Drop the legacy SOAP endpoint', 'cancelled', 'low', ['cleanup'], undefined],
  ];
  for (const [title, status, priority, labels, assignee] of tasks) {
    const t = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title, priority, labels, assignee });
    if (status !== 'pending') await api('PATCH', `/tasks/${t.id}`, { status });
  }

  await page.goto('/projects');
  await expect(page.getByRole('row').filter({ hasText: 'Payments Service' }).getByRole('cell').nth(2)).toHaveText('9');
  await page.screenshot({ path: path.join(DOCS, 'projects.png') });

  await page.getByRole('button', { name: 'New project' }).click();
  await expect(page.getByRole('dialog', { name: 'New project' }).getByRole('region', { name: 'Directories' })).toBeVisible();
  await page.screenshot({ path: path.join(DOCS, 'project-new.png') });
  await page.keyboard.press('Escape');

  await page.goto(`/projects/${project.id}`);
  await expect(page.getByRole('article', { name: 'Drop the legacy SOAP endpoint' })).toBeVisible();
  await page.getByLabel('Select Add idempotency keys to refunds').check();
  await page.screenshot({ path: path.join(DOCS, 'board.png') });

  await page.goto(`/projects/${project.id}?priority=high`);
  await expect(page.getByRole('article', { name: 'Add idempotency keys to refunds' })).toBeHidden();
  await page.getByRole('button', { name: 'Edit Rate-limit the public quote API' }).click();
  await expect(page.getByRole('dialog', { name: 'Edit task' })).toBeVisible();
  await page.screenshot({ path: path.join(DOCS, 'board-edit.png') });
});
