/** Auth is on in this suite: without a stored key the board asks for one, keeps it for the tab and loads. */
import { createProject, expect, test } from './fixtures';

test.describe('key prompt', () => {
  // the first calls are answered 401 (that is what opens the prompt); the browser logs each as a failed resource
  test.use({ apiKey: null, allowConsoleErrors: [/status of 401/] });

  test('asks for the key on a 401, then loads the screen with it', async ({ page }) => {
    const project = await createProject('Keyed Project');
    await page.goto('/projects');
    const prompt = page.getByRole('dialog', { name: 'API key required' });
    await expect(prompt).toBeVisible();
    await prompt.getByLabel('API key').fill('wrong-key-0123456789');
    await prompt.getByLabel('API key').press('Enter');
    await expect(page.getByRole('dialog', { name: 'API key required' })).toBeVisible();
    await expect(prompt).toContainText('The stored key was refused');
    await prompt.getByLabel('API key').fill(process.env.ARMADA_UI_TASK_KEY as string);
    await prompt.getByRole('button', { name: 'Use key' }).click();
    await expect(prompt).toBeHidden();
    await expect(page.getByRole('link', { name: project.name })).toBeVisible();
    expect(await page.evaluate(() => window.sessionStorage.getItem('armada.apiKey'))).toBe(process.env.ARMADA_UI_TASK_KEY);
  });
});
