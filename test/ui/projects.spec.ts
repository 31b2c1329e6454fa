/** The Projects screen: stats, edit, delete after a confirmation that Escape cancels; the filesystem browser. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { alertCountsSeen, api, BROWSE_ROOT, createProject, expect, expectErrorState, expectNoErrorState, hurried, makeRepo, test, watchAlertCounts } from './fixtures';
import { screenshot } from './screenshot';

test('projects show their task stats; edit saves; delete asks first (Escape cancels, Enter confirms)', async ({ page }) => {
  const project = await createProject('Stats Project');
  const t = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'done one' });
  await api('PATCH', `/tasks/${t.id}`, { status: 'completed' });
  await api('POST', '/tasks', { projectId: project.id, title: 'open one' });
  await page.goto('/projects');
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Stats Project' }) });
  await expect(row.getByRole('cell').nth(2)).toHaveText('2');
  await expect(row.getByRole('cell').nth(4)).toHaveText('1');
  // the list is the labelled Projects table; number columns are aligned like their numbers
  await expect(page.getByRole('table', { name: 'Projects' }).getByRole('columnheader', { name: 'Cost' })).toHaveClass(/num/);

  await row.getByRole('button', { name: 'Edit Stats Project' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit project' });
  await dialog.getByLabel('Name').fill('Stats Project Renamed');
  await dialog.getByLabel('Description').fill('renamed in the browser');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('link', { name: 'Stats Project Renamed' })).toBeVisible();
  expect(await api('GET', `/projects/${project.id}`)).toMatchObject({ name: 'Stats Project Renamed', description: 'renamed in the browser' });

  await page.getByRole('button', { name: 'Delete Stats Project Renamed' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete project' });
  await expect(confirm).toBeVisible();
  await expect(confirm.getByRole('button', { name: 'Delete project' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(confirm).toBeHidden();
  expect(await api('GET', `/projects/${project.id}`)).toMatchObject({ id: project.id });

  await page.getByRole('button', { name: 'Delete Stats Project Renamed' }).click();
  await page.keyboard.press('Tab'); // focus stays inside the dialog
  await expect(page.getByRole('dialog', { name: 'Delete project' }).getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('link', { name: 'Stats Project Renamed' })).toBeHidden();
  await expect(api('GET', `/projects/${project.id}`)).rejects.toThrow(/404/);
});

test('the filesystem browser lists and finds git repositories; choosing one fills the path', async ({ page }) => {
  const repo = makeRepo('browse', BROWSE_ROOT);
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await expect(dialog.getByRole('region', { name: 'Directories' })).toBeVisible();
  await dialog.getByLabel('Directory', { exact: true }).fill(BROWSE_ROOT);
  await dialog.getByRole('button', { name: 'Open', exact: true }).click();
  const entry = dialog.getByRole('region', { name: 'Directories' }).getByRole('button', { name: new RegExp(path.basename(repo)) });
  await expect(entry).toContainText('git repository');
  await entry.click();
  await expect(dialog.getByLabel('Repository path')).toHaveValue(repo);

  await dialog.getByLabel('Repository path').fill('');
  await dialog.getByRole('button', { name: 'Find git repositories here' }).click();
  const found = dialog.getByRole('region', { name: 'Git repositories found' });
  await found.getByRole('button', { name: new RegExp(path.basename(repo)) }).click();
  await expect(dialog.getByLabel('Repository path')).toHaveValue(repo);
  await dialog.getByRole('button', { name: 'Create project' }).click();
  await expect(page.getByRole('heading', { name: path.basename(repo) })).toBeVisible();
});

test("a new project from a local repository takes the branch it is on (master), not main", async ({ page }) => {
  const onBranch = (name: string, branch: string) => {
    const dir = makeRepo(name, BROWSE_ROOT);
    execFileSync('git', ['branch', '-m', branch], { cwd: dir });
    return dir;
  };
  const repo = onBranch('on-master', 'master');
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByLabel('Directory', { exact: true }).fill(BROWSE_ROOT);
  await dialog.getByRole('button', { name: 'Open', exact: true }).click();
  await dialog.getByRole('region', { name: 'Directories' }).getByRole('button', { name: new RegExp(path.basename(repo)) }).click();
  await expect(dialog.getByLabel('Repository path')).toHaveValue(repo);
  await expect(dialog.getByLabel('Branch')).toHaveValue('master');
  await dialog.getByLabel('Name').fill('On Master');
  await dialog.getByRole('button', { name: 'Create project' }).click();
  await expect(page.getByRole('heading', { name: 'On Master' })).toBeVisible();
  const id = page.url().split('/projects/')[1]?.split(/[?#]/)[0] as string;
  expect((await api<{ repository: { branch: string } }>('GET', `/projects/${id}`)).repository.branch).toBe('master');

  // a typed path: its branch shows once the field is left
  const trunk = onBranch('on-trunk', 'trunk');
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  await dialog.getByLabel('Repository path').fill(trunk);
  await dialog.getByLabel('Repository path').press('Tab');
  await expect(dialog.getByLabel('Branch')).toHaveValue('trunk');
  await dialog.getByLabel('Name').fill('On Trunk');
  await dialog.getByLabel('Name').press('Enter');
  await expect(page.getByRole('heading', { name: 'On Trunk' })).toBeVisible();
  const trunkId = page.url().split('/projects/')[1]?.split(/[?#]/)[0] as string;
  expect((await api<{ repository: { branch: string } }>('GET', `/projects/${trunkId}`)).repository.branch).toBe('trunk');
});

test.describe('allowed directories of the filesystem browser', () => {
  // a directory outside them is a 403, which the browser logs
  test.use({ allowConsoleErrors: /403/ });

  test('the filesystem browser shows the allowed directories; a directory outside them says so beside them', async ({ page }) => {
    await page.goto('/projects');
    await page.getByRole('button', { name: 'New project' }).click();
    const dialog = page.getByRole('dialog', { name: 'New project' });
    const allowed = dialog.getByRole('list', { name: 'Allowed directories' });
    await expect(allowed.getByRole('button', { name: BROWSE_ROOT, exact: true })).toBeVisible();
    await allowed.getByRole('button', { name: BROWSE_ROOT, exact: true }).click();
    await expect(dialog.getByLabel('Directory', { exact: true })).toHaveValue(BROWSE_ROOT);
    await expect(allowed.getByRole('button', { name: BROWSE_ROOT, exact: true })).toHaveAttribute('aria-pressed', 'true');

    await dialog.getByLabel('Directory', { exact: true }).fill('/usr');
    await dialog.getByRole('button', { name: 'Open', exact: true }).click();
    await expect(dialog.getByRole('alert')).toContainText('Access denied: /usr is outside the allowed directories');
    await expect(allowed.getByRole('button', { name: BROWSE_ROOT, exact: true })).toBeVisible();
    await screenshot(page, 'project-new-denied');
  });

  test('a home directory outside the allowed ones: the browser starts at the first allowed directory, with no error', async ({ page }) => {
    // this suite allows the home directory; its listing is answered as a service that does not allow it answers
    await page.route(
      (url) => url.pathname === '/api/filesystem/list' && url.searchParams.get('path') === '~',
      (route) =>
        route.fulfill({
          status: 403,
          contentType: 'application/json',
          body: JSON.stringify({ success: false, error: { code: 'ACCESS_DENIED', message: `Access denied: ${os.homedir()} is outside the allowed directories`, details: {} } }),
        }),
    );
    await page.goto('/projects');
    await page.getByRole('button', { name: 'New project' }).click();
    const dialog = page.getByRole('dialog', { name: 'New project' });
    const first = (await api<{ roots: string[] }>('GET', '/filesystem/roots')).roots[0] as string;
    await expect(dialog.getByLabel('Directory', { exact: true })).toHaveValue(fs.realpathSync(first));
    await expect(dialog.getByRole('region', { name: 'Directories' }).getByRole('status')).toHaveCount(0);
    await expect(dialog.getByRole('region', { name: 'Directories' })).toContainText(/\S/);
    await expect(dialog.getByRole('alert')).toHaveCount(0);
  });
});

test.describe('a repository path the API refuses', () => {
  // the refused create (400) and the listing that tells a missing path apart (404) are logged by the browser
  test.use({ allowConsoleErrors: /400|404/ });

  test('is named at the Repository path field, in its words, once: does not exist / is not a git repository', async ({ page }) => {
    await page.goto('/projects');
    await page.getByRole('button', { name: 'New project' }).click();
    const dialog = page.getByRole('dialog', { name: 'New project' });
    const field = dialog.getByLabel('Repository path');
    const missing = path.join(BROWSE_ROOT, 'no-such-repository');
    await field.fill(missing);
    await dialog.getByLabel('Name').fill('Missing Repo');
    await dialog.getByRole('button', { name: 'Create project' }).click();
    await expect(dialog.getByRole('alert')).toHaveText(`Repository path: ${missing} does not exist`);
    await expectErrorState(field);
    await expect(field).toHaveAccessibleDescription(`Repository path: ${missing} does not exist`);
    await expectNoErrorState(dialog.getByLabel('Name'));
    // said once: no toast besides it
    await expect(page.getByRole('alert')).toHaveCount(1);
    await screenshot(page, 'project-new-missing-path');

    const plain = fs.mkdtempSync(path.join(BROWSE_ROOT, 'plain-'));
    await field.fill(plain);
    await expect(dialog.getByRole('alert')).toHaveCount(0); // edited: the old message goes
    await expectNoErrorState(field);
    await dialog.getByRole('button', { name: 'Create project' }).click();
    await expect(dialog.getByRole('alert')).toHaveText(`Repository path: ${plain} is not a git repository`);
    await expect(page.getByRole('alert')).toHaveCount(1);
    const names = (await api<{ name: string }[]>('GET', '/projects?limit=100')).map((p) => p.name);
    expect(names).not.toContain('Missing Repo');
  });
});

test('Create with no repository names the repository field (the button was only disabled: Enter said nothing)', async ({ page }) => {
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByLabel('Name').fill('Nothing chosen');
  await dialog.getByLabel('Name').press('Enter');
  await expect(dialog.getByRole('alert')).toHaveText('Choose a repository: type its path, or pick it in the directories below.');
  await expectErrorState(dialog.getByLabel('Repository path'));
  await dialog.getByRole('button', { name: 'Code-hosting URL' }).click();
  await expect(dialog.getByRole('alert')).toHaveText('Type the repository URL to clone.');
  await expectErrorState(dialog.getByLabel('Repository URL'));
  await dialog.getByLabel('Repository URL').fill('https://example.invalid/x.git');
  await expect(dialog.getByRole('alert')).toHaveCount(0);
  await expectNoErrorState(dialog.getByLabel('Repository URL'));
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  expect((await api<{ name: string }[]>('GET', '/projects?limit=100')).map((p) => p.name)).not.toContain('Nothing chosen');
});

test('the default agent profile is picked from the configured profiles', async ({ page }) => {
  const project = await createProject('Profile Project');
  await page.goto('/projects');
  await page.getByRole('button', { name: 'Edit Profile Project' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit project' });
  const profile = dialog.getByLabel('Default agent profile');
  await expect(profile.locator('option')).toContainText(['None', 'scripted']);
  await profile.selectOption('scripted');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(dialog).toBeHidden();
  await expect.poll(async () => (await api<{ defaultLLM: string | null }>('GET', `/projects/${project.id}`)).defaultLLM).toBe('scripted');
  // a profile the configuration no longer has stays shown as the current one, marked
  await api('PATCH', `/projects/${project.id}`, { defaultLLM: 'retired-profile' });
  await page.reload();
  await page.getByRole('button', { name: 'Edit Profile Project' }).click();
  await expect(profile).toHaveValue('retired-profile');
  await expect(profile.locator('option:checked')).toHaveText('retired-profile (not configured)');
  await profile.selectOption('');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(dialog).toBeHidden();
  await expect.poll(async () => (await api<{ defaultLLM: string | null }>('GET', `/projects/${project.id}`)).defaultLLM).toBeNull();
});

test('a listing that arrives while Directory is being edited does not change the text under the cursor', async ({ page }) => {
  // hold the first listing (of ~) until the field has the focus
  let release = () => {};
  const held = new Promise<void>((r) => (release = r));
  await page.route('**/api/filesystem/list**', async (route) => {
    await held;
    await route.continue();
  });
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  const field = dialog.getByLabel('Directory', { exact: true });
  await field.click();
  await expect(field).toHaveValue('~');
  // while the listing is on its way, the directories say so (they were an empty box)
  const directories = dialog.getByRole('region', { name: 'Directories' });
  await expect(directories.getByRole('status')).toHaveText('Reading ~…');
  release();
  // the home directory is listed; the field being edited still shows what it showed
  // (its entries, or "No sub-directories in …")
  await expect(directories.getByRole('status')).toHaveCount(0);
  await expect(directories).toContainText(/\S/);
  await expect(field).toHaveValue('~');
  // once the field is left unchanged, it shows the listed directory
  await dialog.getByLabel('Repository path').focus();
  await expect(field).not.toHaveValue('~');
  await expect(field).toHaveValue(/^\//);
});


test('the Projects list and its Edit dialog read again when the browser is back online, and when the tab is shown again', async ({ page, context }) => {
  const project = await createProject('Offline Project');
  await page.goto('/projects');
  const link = (name: string) => page.getByRole('link', { name, exact: true });
  await expect(link('Offline Project')).toBeVisible();

  // the browser loses the network; meanwhile another client renames the project, sets a script and adds a project
  await context.setOffline(true);
  await api('PATCH', `/projects/${project.id}`, { name: 'Renamed While Offline', setup_script: 'npm ci' });
  await createProject('Added While Offline');
  await context.setOffline(false);
  // back online: the list is read again, nobody reloads (projects have no events of their own)
  await expect(link('Renamed While Offline')).toBeVisible();
  await expect(link('Added While Offline')).toBeVisible();
  await expect(link('Offline Project')).toHaveCount(0);
  await screenshot(page, 'projects-back-online');
  // the project's settings, in its Edit dialog, are as they are now
  await page.getByRole('button', { name: 'Edit Renamed While Offline' }).click();
  let dialog = page.getByRole('dialog', { name: 'Edit project' });
  await expect(dialog.getByLabel('Name')).toHaveValue('Renamed While Offline');
  await expect(dialog.getByLabel('Setup script')).toHaveValue('npm ci');
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();

  // the tab shown again reads them again too: the event the browser fires then (it bubbles from the document), as a
  // headless browser's tabs are never hidden
  await api('PATCH', `/projects/${project.id}`, { name: 'Renamed While Away', dev_script: 'npm run dev' });
  await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange', { bubbles: true })));
  await expect(link('Renamed While Away')).toBeVisible();
  await page.getByRole('button', { name: 'Edit Renamed While Away' }).click();
  dialog = page.getByRole('dialog', { name: 'Edit project' });
  await expect(dialog.getByLabel('Dev script')).toHaveValue('npm run dev');
  await expect(dialog.getByLabel('Setup script')).toHaveValue('npm ci');
  await screenshot(page, 'projects-edit-after-focus');
});

test.describe('a project deleted elsewhere while the list still shows it', () => {
  // the refused delete and edit (404) are logged by the browser as failed resources
  test.use({ allowConsoleErrors: /status of 404/ });

  test('Delete says it was already deleted and drops the row; Edit says so in its dialog, and closing it drops the row', async ({ page }) => {
    const first = await createProject('Gone Elsewhere One');
    const second = await createProject('Gone Elsewhere Two');
    await page.goto('/projects');
    const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name }) });
    await expect(row(first.name)).toBeVisible();
    await expect(row(second.name)).toBeVisible();
    // deleted in another tab, or through the API: projects have no events, so this list still shows them
    await api('DELETE', `/projects/${first.id}`);
    await api('DELETE', `/projects/${second.id}`);

    // what Delete asks for is done already: the dialog closes, the row goes, a notice says why (the dialog stayed open
    // with its 404 in a toast under the backdrop, and the row stayed)
    await page.getByRole('button', { name: `Delete ${first.name}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete project' });
    await confirm.getByRole('button', { name: 'Delete project' }).click();
    await expect(confirm).toBeHidden();
    await expect(page.getByRole('status').filter({ hasText: `${first.name} was already deleted (elsewhere)` })).toBeVisible();
    await expect(row(first.name)).toHaveCount(0);
    await expect(page.getByRole('alert')).toHaveCount(0);

    // an edit of it is said in the dialog, once, and Save is off; closing the dialog drops the row
    await page.getByRole('button', { name: `Edit ${second.name}` }).click();
    const edit = page.getByRole('dialog', { name: 'Edit project' });
    await edit.getByLabel('Description').fill('too late');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect(edit.getByRole('alert')).toHaveText('This project was deleted elsewhere, so there is nothing to save. Cancel closes this dialog and removes it from the list.');
    await expect(page.getByRole('alert')).toHaveCount(1);
    await expect(edit.getByRole('button', { name: 'Save' })).toBeDisabled();
    await screenshot(page, 'projects-edit-gone');
    await edit.getByRole('button', { name: 'Cancel' }).click();
    await expect(edit).toBeHidden();
    await expect(row(second.name)).toHaveCount(0);
  });
});

test.describe('the task service down', () => {
  test.use({ allowConsoleErrors: /status of 503/ });

  test("the Projects list's error stays through the screen's tries (it blinked away, \"Loading projects…\" in its place, at each)", async ({ page }) => {
    const list = /\/api\/projects(\?.*)?$/;
    let tries = 0;
    await page.route(list, (route) => {
      tries++;
      return route.fulfill({ status: 503, json: { success: false, error: { code: 'DATABASE_UNAVAILABLE', message: 'The database (PostgreSQL) is not answering; try again' } } });
    });
    await watchAlertCounts(page);
    await page.clock.install();
    await page.goto('/projects');
    const alerts = page.getByRole('alert');
    // the screen's tries (1 and 2 s apart, then every 5 s) on a clock 10 times as fast (hurried)
    await hurried(page, async () => {
      await expect(alerts.filter({ hasText: 'The task service is unavailable (HTTP 503).' })).toHaveCount(1, { timeout: 20_000 });
      const first = tries;
      await expect.poll(() => tries, { timeout: 20_000 }).toBeGreaterThanOrEqual(first + 3);
      await expect(alerts).toHaveCount(1);
      await page.unroute(list);
      await expect(page.getByRole('table', { name: 'Projects' }).or(page.getByText('No projects yet.'))).toBeVisible({ timeout: 15_000 });
    });
    await expect(alerts).toHaveCount(0);
    expect(await alertCountsSeen(page)).toEqual([0, 1, 0]);
  });
});
