/** The scheduler screen: a source with its health, a schedule paused and resumed (checked through the API), run now and logs. */
import { startFakeFlowBuilder } from '../support/fakeFlowBuilder';
import { expect, holdAnswers, svcApi, test } from './fixtures';
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
  await svcApi('scheduler', 'POST', '/workflows', { name: 'ui-manual', tasks: [{ name: 'hello', type: 'script', script: 'echo hello-from-ui' }] });
  await page.goto('/scheduler');
  await page.getByRole('button', { name: 'Run ui-manual now' }).click();
  const exec = page.getByRole('table', { name: 'Executions' }).locator('tr', { hasText: 'ui-manual' }).first();
  await expect(exec).toBeVisible();
  // the scheduler has no stream: a focus or Refresh brings the final state
  await expect(async () => {
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await expect(exec).toContainText('completed', { timeout: 1000 });
  }).toPass({ timeout: 30_000 });
  await exec.getByRole('button', { name: /Logs of execution/ }).click();
  const dialog = page.getByRole('dialog', { name: /Logs of ui-manual/ });
  await expect(dialog.getByLabel('Execution logs')).toContainText('hello-from-ui');
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
