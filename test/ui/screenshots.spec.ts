/**
 * Screenshots of the screens for docs/ui.md (test/ui/screenshot.ts: test-results/ui/screens/ on every run, docs/ui/
 * with ARMADA_UPDATE_DOCS_SCREENSHOTS=1). Each screen is arranged with a little realistic data first.
 */
import { api, createProject, expect, test } from './fixtures';
import { screenshot } from './screenshot';

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
  await screenshot(page, 'projects', { fullPage: false });

  await page.getByRole('button', { name: 'New project' }).click();
  await expect(page.getByRole('dialog', { name: 'New project' }).getByRole('region', { name: 'Directories' })).toBeVisible();
  await screenshot(page, 'project-new', { fullPage: false });
  await page.keyboard.press('Escape');

  await page.goto(`/projects/${project.id}`);
  await expect(page.getByRole('article', { name: 'Drop the legacy SOAP endpoint' })).toBeVisible();
  await page.getByLabel('Select Add idempotency keys to refunds').check();
  await screenshot(page, 'board', { fullPage: false });

  await page.goto(`/projects/${project.id}?priority=high`);
  await expect(page.getByRole('article', { name: 'Add idempotency keys to refunds' })).toBeHidden();
  await page.getByRole('button', { name: 'Edit Rate-limit the public quote API' }).click();
  await expect(page.getByRole('dialog', { name: 'Edit task' })).toBeVisible();
  await screenshot(page, 'board-edit', { fullPage: false });
});
