/** Auth is on in this suite: without a stored key the board asks for one, keeps it for the tab and loads. */
import { api, createProject, expect, expectErrorState, test } from './fixtures';

test.describe('key prompt', () => {
  // the first calls are answered 401 (that is what opens the prompt): the browser logs each refused request and the
  // live stream's refused upgrade (opened before the first 401 was known) as console errors
  test.use({ apiKey: null, allowConsoleErrors: /status of 401|WebSocket connection to .* failed: HTTP Authentication failed/ });

  test('asks for the key on a 401, then loads the screen with it', async ({ page }) => {
    const project = await createProject('Keyed Project');
    await page.goto('/projects');
    const prompt = page.getByRole('dialog', { name: 'API key required' });
    await expect(prompt).toBeVisible();
    // Enter with nothing typed is said at the field (it did nothing)
    await prompt.getByLabel('API key').press('Enter');
    await expect(prompt.getByRole('alert')).toHaveText('Type the key: it cannot be empty.');
    await expectErrorState(prompt.getByLabel('API key'));
    // closed without a key: the screen says how to get the prompt back, and Retry brings it
    await page.keyboard.press('Escape');
    await expect(prompt).toBeHidden();
    await expect(page.getByRole('alert')).toContainText('This server needs an API key: Retry asks for it.');
    await page.getByRole('button', { name: 'Retry' }).click();
    await expect(prompt).toBeVisible();
    await expect(prompt.getByRole('alert')).toHaveCount(0);
    await prompt.getByLabel('API key').fill('wrong-key-0123456789');
    await prompt.getByLabel('API key').press('Enter');
    await expect(page.getByRole('dialog', { name: 'API key required' })).toBeVisible();
    await expect(prompt).toContainText('The stored key was refused');
    await prompt.getByLabel('API key').fill(process.env.ARMADA_UI_TASK_KEY as string);
    await prompt.getByRole('button', { name: 'Use key' }).click();
    await expect(prompt).toBeHidden();
    await expect(page.getByRole('link', { name: project.name })).toBeVisible();
    expect(await page.evaluate(() => window.sessionStorage.getItem('armada.apiKey'))).toBe(process.env.ARMADA_UI_TASK_KEY);
    // no "connection lost" banner: the live stream waited for the key, then connected with it
    await expect(page.getByTestId('connection-banner')).toBeHidden();
    const board = await createProject('Keyed Board');
    await page.goto(`/projects/${board.id}`);
    await expect(page.getByTestId('board')).toBeVisible();
    await api('POST', '/tasks', { projectId: board.id, title: 'Seen with the stored key' });
    await expect(page.getByRole('article', { name: 'Seen with the stored key' })).toBeVisible();
  });
});
