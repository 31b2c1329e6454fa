/** The board of one project: create, live arrival, drag and drop, keyboard moves, filters in the URL, edit, bulk. */
import { api, createProject, expect, expectErrorState, expectNoErrorState, makeRepo, test } from './fixtures';
import { screenshot } from './screenshot';

interface Task {
  id: string;
  title: string;
  status: string;
  priority: string;
}

const card = (page: import('@playwright/test').Page, title: string) => page.getByRole('article', { name: title, exact: true });
const column = (page: import('@playwright/test').Page, key: string) => page.locator(`[data-column="${key}"]`);

test('create a project from a local path, then a task: its card appears in To do', async ({ page }) => {
  const repo = makeRepo('ui-create');
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const dialog = page.getByRole('dialog', { name: 'New project' });
  await dialog.getByLabel('Repository path').fill(repo);
  await dialog.getByLabel('Name').fill('Created In The Browser');
  await dialog.getByRole('button', { name: 'Create project' }).click();
  await expect(page.getByRole('heading', { name: 'Created In The Browser' })).toBeVisible();
  const projectId = page.url().split('/projects/')[1]?.split(/[?#]/)[0] as string;
  // a project with no task says how to add one (each column said "No tasks")
  await expect(column(page, 'todo').locator('.empty')).toHaveText('No tasks yet. New task adds one here; Apply template adds a template’s tasks.');
  await expect(column(page, 'done').locator('.empty')).toHaveText('No tasks');

  await page.getByRole('button', { name: 'New task' }).click();
  const taskDialog = page.getByRole('dialog', { name: 'New task' });
  await taskDialog.getByLabel('Title').fill('Write the release notes');
  await taskDialog.getByLabel('Priority').selectOption('high');
  await taskDialog.getByLabel('Title').press('Enter');
  await expect(taskDialog).toBeHidden();
  await expect(column(page, 'todo').getByRole('article', { name: 'Write the release notes' })).toBeVisible();
  await expect(column(page, 'todo').locator('.count')).toHaveText('1');

  const tasks = await api<Task[]>('GET', `/projects/${projectId}/tasks`);
  expect(tasks.map((t) => [t.title, t.status, t.priority])).toEqual([['Write the release notes', 'pending', 'high']]);
});

test('a task created through the API appears on the open board within 1 s', async ({ page }) => {
  const project = await createProject('Live Board');
  await page.goto(`/projects/${project.id}`);
  await expect(page.getByTestId('board')).toBeVisible();
  // the stream is open once a first task created through the API shows up (no fixed wait)
  await api('POST', '/tasks', { projectId: project.id, title: 'probe' });
  await expect(card(page, 'probe')).toBeVisible();

  const t0 = Date.now();
  await api('POST', '/tasks', { projectId: project.id, title: 'Arrives live', priority: 'critical' });
  await expect(column(page, 'todo').getByRole('article', { name: 'Arrives live' })).toBeVisible({ timeout: 1000 });
  const ms = Date.now() - t0;
  console.log(`ui: a task created through the API was on the open board ${ms} ms after the POST was sent`);
  expect(ms).toBeLessThanOrEqual(1000);
  // a status change made elsewhere moves the card too
  const [t] = await api<Task[]>('GET', `/projects/${project.id}/tasks?search=Arrives`);
  await api('PATCH', `/tasks/${t?.id}`, { status: 'review' });
  await expect(column(page, 'in-review').getByRole('article', { name: 'Arrives live' })).toBeVisible({ timeout: 1000 });
  // so does an edit (task.updated) and a delete (task.deleted) made elsewhere
  await api('PATCH', `/tasks/${t?.id}`, { title: 'Renamed elsewhere', labels: ['ops'] });
  await expect(column(page, 'in-review').getByRole('article', { name: 'Renamed elsewhere' })).toBeVisible({ timeout: 1000 });
  await expect(card(page, 'Arrives live')).toHaveCount(0);
  await api('DELETE', `/tasks/${t?.id}`);
  await expect(card(page, 'Renamed elsewhere')).toHaveCount(0, { timeout: 1000 });
  await expect(card(page, 'probe')).toBeVisible();
});

test('drag a card to another column, or move it with its status select: the status changes', async ({ page }) => {
  const project = await createProject('Drag Board');
  const dragged = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Drag me' });
  const keyed = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Move me by keyboard' });
  await page.goto(`/projects/${project.id}`);

  await card(page, 'Drag me').dragTo(column(page, 'in-progress'));
  await expect(column(page, 'in-progress').getByRole('article', { name: 'Drag me' })).toBeVisible();
  await expect.poll(async () => (await api<Task>('GET', `/tasks/${dragged.id}`)).status).toBe('in_progress');

  const select = page.getByLabel('Status of Move me by keyboard');
  await select.focus();
  await select.selectOption('review');
  await page.getByRole('button', { name: 'Move Move me by keyboard to In review' }).click();
  await expect(column(page, 'in-review').getByRole('article', { name: 'Move me by keyboard' })).toBeVisible();
  await expect.poll(async () => (await api<Task>('GET', `/tasks/${keyed.id}`)).status).toBe('review');
  await expect(column(page, 'in-progress').locator('.count')).toHaveText('1');
  await expect(column(page, 'todo').locator('.count')).toHaveText('0');
});

test('filters live in the URL and survive a reload', async ({ page }) => {
  const project = await createProject('Filter Board');
  await api('POST', '/tasks', { projectId: project.id, title: 'Alpha bug', priority: 'high', labels: ['bug'], assignee: 'ann' });
  await api('POST', '/tasks', { projectId: project.id, title: 'Alpha feature', priority: 'low', labels: ['feature'] });
  await api('POST', '/tasks', { projectId: project.id, title: 'Beta bug', priority: 'high', labels: ['bug'], assignee: 'ben' });
  await page.goto(`/projects/${project.id}`);
  await expect(card(page, 'Beta bug')).toBeVisible();

  await page.getByLabel('Search').fill('alpha');
  await expect(page).toHaveURL(/[?&]q=alpha/);
  await expect(card(page, 'Beta bug')).toBeHidden();
  await page.getByLabel('Priority', { exact: true }).selectOption('high');
  await expect(page).toHaveURL(/priority=high/);
  await expect(card(page, 'Alpha feature')).toBeHidden();
  await expect(card(page, 'Alpha bug')).toBeVisible();

  await page.reload();
  await expect(page.getByLabel('Search')).toHaveValue('alpha');
  await expect(card(page, 'Alpha bug')).toBeVisible();
  await expect(card(page, 'Alpha feature')).toBeHidden();
  await expect(page.getByRole('status').filter({ hasText: 'of 3 tasks' })).toHaveText('1 of 3 tasks');

  await page.goto(`/projects/${project.id}?labels=bug&assignee=ben`);
  await expect(card(page, 'Beta bug')).toBeVisible();
  await expect(card(page, 'Alpha bug')).toBeHidden();
  await expect(page.getByLabel('Assignee')).toHaveValue('ben');
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await expect(page).toHaveURL(new RegExp(`/projects/${project.id}$`));
  await expect(card(page, 'Alpha feature')).toBeVisible();
});

test('the Labels filter takes several labels, and a label with a space, typed key by key', async ({ page }) => {
  const project = await createProject('Typed Labels Board');
  await api('POST', '/tasks', { projectId: project.id, title: 'Bug in the UI', labels: ['bug', 'ui'] });
  await api('POST', '/tasks', { projectId: project.id, title: 'Bug elsewhere', labels: ['bug'] });
  await api('POST', '/tasks', { projectId: project.id, title: 'Waiting for a review', labels: ['needs review'] });
  await page.goto(`/projects/${project.id}`);
  await expect(card(page, 'Bug elsewhere')).toBeVisible();
  const labels = page.getByLabel('Labels', { exact: true });
  // typed as a person types: the field was rewritten from the labels at each key, so the comma and the space vanished
  await labels.pressSequentially('bug, ui');
  await expect(labels).toHaveValue('bug, ui');
  await expect(page).toHaveURL(/[?&]labels=bug%2Cui(&|$)/);
  await expect(card(page, 'Bug in the UI')).toBeVisible();
  await expect(card(page, 'Bug elsewhere')).toBeHidden();
  await labels.fill('');
  await labels.pressSequentially('needs review');
  await expect(labels).toHaveValue('needs review');
  await expect(card(page, 'Waiting for a review')).toBeVisible();
  await expect(card(page, 'Bug in the UI')).toBeHidden();
  await expect(page.getByRole('status').filter({ hasText: 'of 3 tasks' })).toHaveText('1 of 3 tasks');
  // Clear filters empties the field, and a reload shows what the URL holds
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await expect(labels).toHaveValue('');
  await expect(card(page, 'Bug elsewhere')).toBeVisible();
  await page.goto(`/projects/${project.id}?labels=bug,ui`);
  await expect(labels).toHaveValue('bug, ui');
  await expect(card(page, 'Bug elsewhere')).toBeHidden();
});

test('a filter value in the URL that the select cannot show is dropped, or shown: what filters is always visible', async ({ page }) => {
  const project = await createProject('Odd Filter Board');
  await api('POST', '/tasks', { projectId: project.id, title: 'Urgent one', priority: 'high', assignee: 'ann' });
  await api('POST', '/tasks', { projectId: project.id, title: 'Calm one', priority: 'low' });
  const priority = page.getByLabel('Priority', { exact: true });
  const assignee = page.getByLabel('Assignee');
  const count = page.getByRole('status').filter({ hasText: 'of 2 tasks' });

  // a priority no task can have: dropped, from the URL too; the board is unfiltered and says so
  await page.goto(`/projects/${project.id}?priority=bogus`);
  await expect(card(page, 'Calm one')).toBeVisible();
  await expect(card(page, 'Urgent one')).toBeVisible();
  await expect(priority).toHaveValue('');
  await expect(count).toHaveText('2 of 2 tasks');
  await expect(page).not.toHaveURL(/priority=/);

  // another spelling of a known priority: applied, and the select shows it
  await page.goto(`/projects/${project.id}?priority=HIGH`);
  await expect(card(page, 'Urgent one')).toBeVisible();
  await expect(card(page, 'Calm one')).toBeHidden();
  await expect(priority).toHaveValue('high');
  await expect(count).toHaveText('1 of 2 tasks');
  await expect(page).toHaveURL(/priority=high/);

  // an assignee no task has: applied (nothing matches), and shown as the selected one
  await page.goto(`/projects/${project.id}?assignee=nobody`);
  await expect(count).toHaveText('0 of 2 tasks');
  await expect(assignee).toHaveValue('nobody');
  await expect(assignee.locator('option:checked')).toHaveText(/nobody/);
  await expect(page.getByRole('button', { name: 'Clear filters' })).toBeVisible();
});

test('keyboard: the card status select moves the card only when confirmed, and focus follows the card', async ({ page }) => {
  const project = await createProject('Keyboard Move Board');
  const t = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Step by step' });
  await page.goto(`/projects/${project.id}`);
  const select = column(page, 'todo').getByLabel('Status of Step by step');
  await select.focus();
  // ArrowDown on the closed select picks the next status; nothing moves yet
  await page.keyboard.press('ArrowDown');
  const move = page.getByRole('button', { name: 'Move Step by step to In progress' });
  await expect(move).toBeVisible();
  await expect(select).toBeFocused();
  await screenshot(page, 'board-keyboard-move');
  expect((await api<Task>('GET', `/tasks/${t.id}`)).status).toBe('pending');
  await expect(column(page, 'todo').getByRole('article', { name: 'Step by step' })).toBeVisible();
  // Tab reaches the confirm button; Enter moves the card, and focus goes to its status select in the new column
  await page.keyboard.press('Tab');
  await expect(move).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(column(page, 'in-progress').getByRole('article', { name: 'Step by step' })).toBeVisible();
  await expect.poll(async () => (await api<Task>('GET', `/tasks/${t.id}`)).status).toBe('in_progress');
  await expect(column(page, 'in-progress').getByLabel('Status of Step by step')).toBeFocused();
  await expect(page.getByRole('button', { name: /^Move Step by step/ })).toHaveCount(0);
  // Escape puts back a picked status that was not confirmed
  await page.keyboard.press('ArrowDown');
  await expect(page.getByRole('button', { name: 'Move Step by step to In review' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(column(page, 'in-progress').getByLabel('Status of Step by step')).toHaveValue('in_progress');
  await expect(page.getByRole('button', { name: /^Move Step by step/ })).toHaveCount(0);
  expect((await api<Task>('GET', `/tasks/${t.id}`)).status).toBe('in_progress');
});

test('edit a task in its dialog (Escape closes it); bulk move and bulk delete after confirmation', async ({ page }) => {
  const project = await createProject('Bulk Board');
  const a = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'First of many' });
  const b = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Second of many' });
  const c = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Third of many' });
  await page.goto(`/projects/${project.id}`);

  await page.getByRole('button', { name: 'Edit Third of many' }).click();
  let dialog = page.getByRole('dialog', { name: 'Edit task' });
  await expect(dialog.getByLabel('Title')).toHaveValue('Third of many');
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await page.getByRole('button', { name: 'Edit Third of many' }).click();
  dialog = page.getByRole('dialog', { name: 'Edit task' });
  await dialog.getByLabel('Title').fill('Third, renamed');
  await dialog.getByLabel('Labels (comma-separated)').fill('docs, ui');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(card(page, 'Third, renamed')).toBeVisible();
  expect(await api<Task & { labels: string[] }>('GET', `/tasks/${c.id}`)).toMatchObject({ title: 'Third, renamed', labels: ['docs', 'ui'] });

  await page.getByLabel('Select First of many').check();
  await page.getByLabel('Select Second of many').check();
  const bar = page.getByRole('region', { name: 'Selected tasks' });
  await expect(bar).toContainText('2 selected');
  await bar.getByLabel('Move to').selectOption('completed');
  await bar.getByRole('button', { name: 'Move' }).click();
  await expect(column(page, 'done').locator('.count')).toHaveText('2');
  for (const t of [a, b]) expect((await api<Task>('GET', `/tasks/${t.id}`)).status).toBe('completed');

  await page.getByLabel('Select First of many').check();
  await page.getByRole('region', { name: 'Selected tasks' }).getByRole('button', { name: 'Delete' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete tasks' });
  await expect(confirm).toContainText('Delete 1 selected task?');
  await page.keyboard.press('Enter');
  await expect(confirm).toBeHidden();
  await expect(card(page, 'First of many')).toBeHidden();
  const remaining = await api<Task[]>('GET', `/projects/${project.id}/tasks`);
  expect(remaining.map((t) => t.id).sort()).toEqual([b.id, c.id].sort());
});

test('the selection drops a task deleted elsewhere, and says how many selected cards the filters hide', async ({ page }) => {
  const project = await createProject('Selection Board');
  await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Selected and kept' });
  const gone = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Selected, deleted elsewhere' });
  await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Selected, then filtered out' });
  await page.goto(`/projects/${project.id}`);
  for (const title of ['Selected and kept', 'Selected, deleted elsewhere', 'Selected, then filtered out']) await page.getByLabel(`Select ${title}`).check();
  const bar = page.getByRole('region', { name: 'Selected tasks' });
  await expect(bar.locator('strong')).toHaveText('3 selected');

  // deleted in another tab or through the API: its card goes, and so does its place in the count (it said 3)
  await api('DELETE', `/tasks/${gone.id}`);
  await expect(card(page, 'Selected, deleted elsewhere')).toHaveCount(0);
  await expect(bar.locator('strong')).toHaveText('2 selected');

  // a filter hides a selected card: it is still selected, and the bar and the confirmation say so
  await page.getByLabel('Search').fill('kept');
  await expect(card(page, 'Selected, then filtered out')).toBeHidden();
  await expect(bar.locator('strong')).toHaveText('2 selected (1 hidden by the filters)');
  await bar.getByRole('button', { name: 'Delete' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete tasks' });
  await expect(confirm).toContainText('Delete 2 selected tasks (1 of them hidden by the filters)?');
  await screenshot(page, 'board-selection-hidden');
  await page.keyboard.press('Escape');
  await expect(confirm).toBeHidden();
  expect((await api<Task[]>('GET', `/projects/${project.id}/tasks`)).map((t) => t.title).sort()).toEqual(['Selected and kept', 'Selected, then filtered out']);
});

test('a task deleted elsewhere while its Edit dialog is open: the dialog says so and saves nothing', async ({ page }) => {
  const project = await createProject('Deleted While Edited Board');
  const t = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Edited here, deleted there' });
  await page.goto(`/projects/${project.id}`);
  await page.getByRole('button', { name: 'Edit Edited here, deleted there' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit task' });
  await dialog.getByLabel('Description').fill('typed while it was being deleted');
  await api('DELETE', `/tasks/${t.id}`);
  // before: nothing said it, and Save answered "Task … not found"
  await expect(dialog.getByRole('alert')).toHaveText(
    'This task was deleted elsewhere (another tab, or through the API), so there is nothing to save. Cancel closes this dialog.',
  );
  await expect(dialog.getByRole('button', { name: 'Save' })).toBeDisabled();
  await dialog.getByLabel('Title').press('Enter');
  await expect(page.getByRole('alert')).toHaveCount(1);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  await expect(card(page, 'Edited here, deleted there')).toHaveCount(0);
});

test('Enter on a blank or spaces-only title names the Title field and creates nothing', async ({ page }) => {
  const project = await createProject('Blank Title Board');
  await page.goto(`/projects/${project.id}`);
  await page.getByRole('button', { name: 'New task' }).click();
  const dialog = page.getByRole('dialog', { name: 'New task' });
  const title = dialog.getByLabel('Title');
  for (const typed of ['', '   ']) {
    await title.fill(typed);
    await title.press('Enter');
    await expect(dialog.getByRole('alert')).toHaveText('Give the task a title: it cannot be empty or only spaces.');
    await expect(title).toHaveAccessibleDescription('Give the task a title: it cannot be empty or only spaces.');
    // shown on the field itself too: marked invalid and bordered in red (it had the plain border)
    await expectErrorState(title);
    await expectNoErrorState(dialog.getByLabel('Description'));
    await expect(title).toBeFocused();
  }
  await screenshot(page, 'board-task-blank-title');
  // a title makes the error go, and Enter creates the task
  await title.fill('  Spaced out  ');
  await expect(dialog.getByRole('alert')).toHaveCount(0);
  await expectNoErrorState(title);
  await title.press('Enter');
  await expect(dialog).toBeHidden();
  await expect(card(page, 'Spaced out')).toBeVisible();
  expect((await api<Task[]>('GET', `/projects/${project.id}/tasks`)).map((t) => t.title)).toEqual(['Spaced out']);
});

test('Escape keeps a new task being typed as a draft; Create or Cancel ends the draft', async ({ page }) => {
  const project = await createProject('Draft Board');
  await page.goto(`/projects/${project.id}`);
  await page.getByRole('button', { name: 'New task' }).click();
  let dialog = page.getByRole('dialog', { name: 'New task' });
  await dialog.getByLabel('Title').fill('Half-written idea');
  await dialog.getByLabel('Description').fill('three paragraphs of context');
  await dialog.getByLabel('Priority').selectOption('high');
  await dialog.getByLabel('Labels (comma-separated)').fill('ideas');
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  expect(await api<Task[]>('GET', `/projects/${project.id}/tasks`)).toEqual([]);

  // New task again: what was typed is back, and the dialog says so (it was lost)
  await page.getByRole('button', { name: 'New task' }).click();
  dialog = page.getByRole('dialog', { name: 'New task' });
  await expect(dialog.getByLabel('Title')).toHaveValue('Half-written idea');
  await expect(dialog.getByLabel('Description')).toHaveValue('three paragraphs of context');
  await expect(dialog.getByLabel('Priority')).toHaveValue('high');
  await expect(dialog.getByLabel('Labels (comma-separated)')).toHaveValue('ideas');
  await expect(dialog.getByRole('status')).toHaveText('Your unsaved draft is back. Cancel discards it.');
  await screenshot(page, 'board-task-draft');
  // the draft outlives a reload of the tab, and is this project's only
  await page.reload();
  await page.getByRole('button', { name: 'New task' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('Half-written idea');
  await page.keyboard.press('Escape');
  const other = await createProject('Draft Board Elsewhere');
  await page.goto(`/projects/${other.id}`);
  await page.getByRole('button', { name: 'New task' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('');
  await expect(dialog.getByRole('status')).toHaveCount(0);
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  // Create ends the draft: the next New task is empty
  await page.goto(`/projects/${project.id}`);
  await page.getByRole('button', { name: 'New task' }).click();
  await dialog.getByRole('button', { name: 'Create task' }).click();
  await expect(dialog).toBeHidden();
  await expect(card(page, 'Half-written idea')).toBeVisible();
  expect(await api<(Task & { description: string; labels: string[] })[]>('GET', `/projects/${project.id}/tasks`)).toMatchObject([
    { title: 'Half-written idea', description: 'three paragraphs of context', priority: 'high', labels: ['ideas'] },
  ]);
  await page.getByRole('button', { name: 'New task' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('');
  await expect(dialog.getByRole('status')).toHaveCount(0);

  // Cancel discards: a new draft typed and cancelled does not come back
  await dialog.getByLabel('Title').fill('Never mind');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await page.getByRole('button', { name: 'New task' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('');
});

test('Escape keeps the edits of a task as they keep a new task\'s draft; Save or Cancel ends them', async ({ page }) => {
  const project = await createProject('Edit Draft Board');
  const task = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Edit me', description: 'as it was' });
  await page.goto(`/projects/${project.id}`);
  const dialog = page.getByRole('dialog', { name: 'Edit task' });
  await page.getByRole('button', { name: 'Edit Edit me' }).click();
  await expect(dialog.getByRole('status')).toHaveCount(0);
  await dialog.getByLabel('Title').fill('Edit me, better');
  await dialog.getByLabel('Priority').selectOption('high');
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  // nothing saved, and nothing lost: Edit brings the edits back and says so (Escape dropped them without a word)
  expect(await api<Task>('GET', `/tasks/${task.id}`)).toMatchObject({ title: 'Edit me', priority: 'medium' });
  await expect(card(page, 'Edit me')).toBeVisible();
  await page.getByRole('button', { name: 'Edit Edit me' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('Edit me, better');
  await expect(dialog.getByLabel('Priority')).toHaveValue('high');
  await expect(dialog.getByLabel('Description')).toHaveValue('as it was');
  await expect(dialog.getByRole('status')).toHaveText('Your unsaved edits are back. Cancel discards them.');
  await screenshot(page, 'board-task-edit-draft');

  // kept over a reload; a field changed elsewhere meanwhile shows its new value, the edited ones keep the edits
  await page.keyboard.press('Escape');
  await api('PATCH', `/tasks/${task.id}`, { description: 'changed elsewhere' });
  await page.reload();
  await page.getByRole('button', { name: 'Edit Edit me' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('Edit me, better');
  await expect(dialog.getByLabel('Description')).toHaveValue('changed elsewhere');

  // Cancel discards them: the next Edit shows the task as it is
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  await page.getByRole('button', { name: 'Edit Edit me' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('Edit me');
  await expect(dialog.getByLabel('Priority')).toHaveValue('medium');
  await expect(dialog.getByRole('status')).toHaveCount(0);

  // Save ends them: the task has them, and the next Edit has no draft
  await dialog.getByLabel('Title').fill('Edit me, saved');
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Edit Edit me' }).click();
  await dialog.getByRole('button', { name: 'Save' }).click();
  await expect(dialog).toBeHidden();
  await expect(card(page, 'Edit me, saved')).toBeVisible();
  expect(await api<Task>('GET', `/tasks/${task.id}`)).toMatchObject({ title: 'Edit me, saved' });
  await page.getByRole('button', { name: 'Edit Edit me, saved' }).click();
  await expect(dialog.getByLabel('Title')).toHaveValue('Edit me, saved');
  await expect(dialog.getByRole('status')).toHaveCount(0);
  // the project's New task draft is another thing: untouched by the edits
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'New task' }).click();
  await expect(page.getByRole('dialog', { name: 'New task' }).getByLabel('Title')).toHaveValue('');
});

test.describe('a label the task service refuses', () => {
  // the refused create (400) is logged by the browser as a failed resource
  test.use({ allowConsoleErrors: /status of 400/ });

  test('is named at the Labels field, in the dialog, not in a toast behind it', async ({ page }) => {
    const project = await createProject('Label Error Board');
    await page.goto(`/projects/${project.id}`);
    await page.getByRole('button', { name: 'New task' }).click();
    const dialog = page.getByRole('dialog', { name: 'New task' });
    const long = `l${'o'.repeat(100)}ng`;
    await dialog.getByLabel('Title').fill('Labelled too long');
    const labels = dialog.getByLabel('Labels (comma-separated)');
    await labels.fill(`ok, ${long}`);
    await labels.press('Enter');
    const said = `Labels: "${long.slice(0, 24)}…" must NOT have more than 100 characters`;
    await expect(dialog.getByRole('alert')).toHaveText(said);
    await expect(labels).toHaveAccessibleDescription(said);
    await expectErrorState(labels);
    await expectNoErrorState(dialog.getByLabel('Title'));
    // once: no toast behind the dialog
    await expect(page.getByRole('alert')).toHaveCount(1);
    await expect(dialog).toBeVisible();
    await screenshot(page, 'board-task-label-error');
    expect(await api<Task[]>('GET', `/projects/${project.id}/tasks`)).toEqual([]);

    // fifty-one labels: the whole field is named
    await labels.fill(Array.from({ length: 51 }, (_, i) => `l${i}`).join(', '));
    await expect(dialog.getByRole('alert')).toHaveCount(0);
    await labels.press('Enter');
    await expect(dialog.getByRole('alert')).toHaveText('Labels: must NOT have more than 50 items');
    await expect(page.getByRole('alert')).toHaveCount(1);

    // fixed, it saves
    await labels.fill('ok, short');
    await labels.press('Enter');
    await expect(dialog).toBeHidden();
    await expect(card(page, 'Labelled too long')).toBeVisible();
    expect(await api<(Task & { labels: string[] })[]>('GET', `/projects/${project.id}/tasks`)).toMatchObject([{ title: 'Labelled too long', labels: ['ok', 'short'] }]);
  });
});

test('at 375 px a strip names every column with its count, on one row, its end that has more faded; a tap or the keyboard shows the column (nothing said In review had cards)', async ({ page }) => {
  const project = await createProject('Phone Board');
  const review = await api<Task>('POST', '/tasks', { projectId: project.id, title: 'Waiting for review' });
  await api('PATCH', `/tasks/${review.id}`, { status: 'review' });
  await api('POST', '/tasks', { projectId: project.id, title: 'Still to do' });
  await page.setViewportSize({ width: 375, height: 780 });
  await page.goto(`/projects/${project.id}`);
  const strip = page.getByRole('navigation', { name: 'Columns' });
  // every column, with its count, on one row (it wrapped onto two at 390 px); what does not fit scrolls inside the
  // strip, which stays inside the window
  const tops = new Set<number>();
  for (const [name, count] of [['To do', 1], ['In progress', 0], ['In review', 1], ['Done', 0], ['Cancelled', 0]] as const) {
    const button = strip.getByRole('button', { name: `${name} ${count}`, exact: true });
    tops.add(Math.round((await button.boundingBox())?.y ?? -1));
  }
  expect([...tops]).toHaveLength(1);
  const stripBox = await strip.boundingBox();
  expect((stripBox?.x ?? 0) + (stripBox?.width ?? 0)).toBeLessThanOrEqual(375);
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
  await expect(strip.getByRole('button', { name: 'To do 1' })).toHaveAttribute('aria-current', 'true');
  await expect(strip.getByRole('button', { name: 'To do 1' })).toBeInViewport({ ratio: 1 });
  await expect(strip.getByRole('button', { name: 'Cancelled 0' })).not.toBeInViewport({ ratio: 1 });
  // a phone shows no scrollbar: the end that has more to scroll fades out (nothing said the strip scrolled), the
  // other does not
  const fade = (side: 'before' | 'after') => strip.locator('xpath=..').evaluate((box, s) => getComputedStyle(box, `::${s}`).opacity, side);
  await expect.poll(() => fade('after')).toBe('1');
  expect(await fade('before')).toBe('0');
  // where each button lies in the strip and how wide it is (the strip's scroll left out): the marked one was bold,
  // so wider, and moving the mark moved the buttons after it
  const places = () =>
    strip.evaluate((el) =>
      [...el.children].map((b) => {
        const r = b.getBoundingClientRect();
        return `${Math.round(r.left - el.getBoundingClientRect().left + el.scrollLeft)} ${r.width.toFixed(1)}`;
      }),
    );
  const placed = await places();
  // the In review card is out of the window until its column is chosen
  const reviewCard = column(page, 'in-review').getByRole('article', { name: 'Waiting for review' });
  await expect(reviewCard).not.toBeInViewport();
  await strip.getByRole('button', { name: 'In review 1' }).click();
  await expect(reviewCard).toBeInViewport({ ratio: 1 });
  await expect(strip.getByRole('button', { name: 'In review 1' })).toHaveAttribute('aria-current', 'true');
  await expect(strip.getByRole('button', { name: 'To do 1' })).not.toHaveAttribute('aria-current', 'true');
  expect(await places()).toEqual(placed);
  // one column at a time: the one chosen fills most of the board, the next one peeks at the right edge
  const box = await column(page, 'in-review').boundingBox();
  expect(box?.width ?? 0).toBeGreaterThan(375 * 0.7);
  await expect(column(page, 'done')).toBeInViewport();
  await expect(column(page, 'in-progress')).not.toBeInViewport();
  await screenshot(page, 'narrow-board-strip', { fullPage: false });
  await expect(strip.getByRole('button', { name: 'In review 1' })).toHaveAttribute('aria-current', 'true');
  // by keyboard: Tab brings a button out of the strip's view into it, Enter shows its column
  await strip.getByRole('button', { name: 'In review 1' }).focus();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  const cancelled = strip.getByRole('button', { name: 'Cancelled 0' });
  await expect(cancelled).toBeFocused();
  await expect(cancelled).toBeInViewport({ ratio: 1 });
  await page.keyboard.press('Enter');
  await expect(cancelled).toHaveAttribute('aria-current', 'true');
  await expect.poll(async () => {
    const c = await column(page, 'cancelled').boundingBox();
    return !!c && c.x >= 0 && c.x + c.width <= 375;
  }).toBe(true);
  await expect(strip.getByRole('button', { name: 'To do 1' })).not.toBeInViewport();
  // scrolled to its end: no fade there any more, one at the start, which now has more; still no button moved
  await expect.poll(() => fade('after')).toBe('0');
  await expect.poll(() => fade('before')).toBe('1');
  expect(await places()).toEqual(placed);
  // a swipe back (the board scrolled by hand) moves the mark too, and the strip brings the marked button into view
  await page.locator('[data-testid="board"]').evaluate((b) => b.scrollTo({ left: 0 }));
  await expect(strip.getByRole('button', { name: 'To do 1' })).toHaveAttribute('aria-current', 'true');
  await expect(strip.getByRole('button', { name: 'To do 1' })).toBeInViewport({ ratio: 1 });
  // the desktop board has no strip: its five columns are side by side
  await page.setViewportSize({ width: 1360, height: 860 });
  await expect(strip).toBeHidden();
  await expect(reviewCard).toBeInViewport({ ratio: 1 });
});
