/**
 * The Task screen end to end: a project and a task created in the browser, the card opened, an attempt started from
 * the screen with the scripted agent (TICKS: it edits files, then prints a timestamped line every 250 ms), its log
 * lines appearing live (measured: the time from the agent's print to the line in the open log view), the diff showing
 * the agent's file while it runs, a squash merge, and the card in the board's done column. It takes the `task`
 * screenshot (log and diff; test/ui/screenshot.ts).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, createProject, expect, expectErrorState, expectNoErrorState, holdAnswers, lineStarts, makeRepo, test } from './fixtures';
import { screenshot } from './screenshot';

const TICK = /tick (\d+) at (\d+)/;
/** Why Create PR… is disabled on an attempt that committed nothing. */
const NO_PR = 'No pull request to open: the attempt made no changes.';
/** Why Merge… and Create PR… are disabled on a failed attempt that left no changes. */
const FAILED_NOTHING = 'the attempt failed and left no changes. Its log says why; send a follow-up or start a new attempt.';
/** … and on an attempt cancelled before it changed anything. */
const CANCELLED_NOTHING = 'the attempt was cancelled before it changed anything. Start a new attempt to go on.';

let made = 0;
/**
 * A project name of this run only: names are unique (a second project of a name is a 409), and `--repeat-each` runs
 * a test again against the same `armada start`.
 */
function unique(name: string): string {
  made += 1;
  return `${name} ${Date.now().toString(36)}${made}`;
}

/**
 * Resolves once the attempt is completed, asked every 250 ms: an attempt of the scripted agent takes a few seconds,
 * and expect.poll's default steps (1 s apart after the first second) saw it finished up to a second late.
 */
async function attemptCompleted(attemptId: string): Promise<void> {
  await expect.poll(async () => (await api<{ status: string }>('GET', `/attempts/${attemptId}`)).status, { timeout: 60_000, intervals: [250] }).toBe('completed');
}

test('start an attempt, watch its log live, read the diff, merge; the card moves to done', async ({ page }) => {
  // project and task made in the browser, as a user does
  const repo = makeRepo('ui-task-screen');
  const projectName = unique('Task Screen Project');
  await page.goto('/projects');
  await page.getByRole('button', { name: 'New project' }).click();
  const projectDialog = page.getByRole('dialog', { name: 'New project' });
  await projectDialog.getByLabel('Repository path').fill(repo);
  await projectDialog.getByLabel('Name').fill(projectName);
  await projectDialog.getByRole('button', { name: 'Create project' }).click();
  await expect(page.getByRole('heading', { name: projectName })).toBeVisible();
  const projectId = page.url().split('/projects/')[1]?.split(/[?#]/)[0] as string;
  await page.getByRole('button', { name: 'New task' }).click();
  const taskDialog = page.getByRole('dialog', { name: 'New task' });
  await taskDialog.getByLabel('Title').fill('Add the greeting file');
  await taskDialog.getByLabel('Description').fill('TICKS:24 — print progress while working');
  await taskDialog.getByLabel('Title').press('Enter');
  await expect(taskDialog).toBeHidden();
  await page.locator('[data-column="todo"]').getByRole('link', { name: 'Add the greeting file' }).click();
  await expect(page).toHaveURL(/\/tasks\//);
  const taskId = page.url().split('/tasks/')[1]?.split(/[?#]/)[0] as string;

  await expect(page.getByRole('heading', { name: 'Add the greeting file' })).toBeVisible();
  await expect(page.getByText(/^No attempts yet\./)).toBeVisible();

  // every log line the page shows, with the time it first appeared (the agent's lines carry their print time)
  await page.evaluate(() => {
    const w = window as unknown as { tickSeen: Record<string, number> };
    w.tickSeen = {};
    new MutationObserver(() => {
      for (const el of document.querySelectorAll('.log-line .log-msg')) {
        const m = /tick (\d+) at (\d+)/.exec(el.textContent ?? '');
        if (m && !(m[0] in w.tickSeen)) w.tickSeen[m[0]] = Date.now();
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });

  // start from the screen: the dialog offers the configured profiles, Enter starts
  await page.getByRole('button', { name: 'Start attempt…' }).click();
  const start = page.getByRole('dialog', { name: 'Start an attempt' });
  await start.getByLabel('Agent profile').selectOption('scripted');
  await start.getByLabel('Agent profile').press('Enter');
  await expect(start).toBeHidden();

  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText('agent started in', { timeout: 30_000 });
  const logOpenAt = Date.now();
  // the diff is live: the agent's new file shows while it still runs (it ticks for 6 s after its edit)
  const diff = page.getByRole('region', { name: 'Diff' });
  const tree = diff.getByRole('navigation', { name: 'Changed files' });
  await expect(tree.getByRole('button', { name: /added\.txt/ })).toBeVisible({ timeout: 5_000 });
  await expect(page.locator('.attempt-header').getByText('running')).toBeVisible();
  // while it runs, Create PR… says when it can be used, as Merge… does: it said "the attempt made no changes" beside
  // a diff showing the agent's files (and "the attempt's worktree and branch were removed" before its worktree came)
  await expect(page.getByRole('button', { name: 'Create PR…' })).toBeDisabled();
  await expect(page.getByRole('button', { name: 'Create PR…' })).toHaveAccessibleDescription('Open a pull request once the attempt has finished.');
  await expect(page.getByRole('button', { name: 'Merge…' })).toHaveAccessibleDescription('Merge once the attempt has finished.');
  // the attempt's changes are counted when it ends: the table said "0 files +0 −0" beside this live diff
  await expect(page.getByRole('table', { name: 'Attempts' }).getByRole('row').nth(1).getByRole('cell').nth(6)).toHaveText('counted at the end');
  await expect(log).toContainText('tick 24 at', { timeout: 30_000 });
  await expect(log).toContainText('agent exited with code 0', { timeout: 15_000 });

  // latency of the lines printed after the log view was open (the earlier ones came in its first read)
  const seen = await page.evaluate(() => (window as unknown as { tickSeen: Record<string, number> }).tickSeen);
  const latencies = Object.entries(seen)
    .map(([line, at]) => ({ printed: Number(TICK.exec(line)?.[2]), at }))
    .filter((t) => t.printed > logOpenAt)
    .map((t) => t.at - t.printed);
  expect(latencies.length).toBeGreaterThan(3);
  const max = Math.max(...latencies);
  const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
  process.stdout.write(`ui: live log line latency over ${latencies.length} lines: mean ${mean.toFixed(0)} ms, max ${max} ms\n`);
  expect(max).toBeLessThan(1000);

  // search highlights, counts and steps through the matches: tick 1, tick 10 … tick 19
  const search = page.getByLabel('Search log');
  await search.fill('tick 1');
  await expect(page.getByText('0 of 11')).toBeVisible();
  await search.press('Enter');
  await expect(page.getByText('1 of 11')).toBeVisible();
  await search.press('Enter');
  await expect(page.getByText('2 of 11')).toBeVisible();
  await search.press('Shift+Enter');
  await expect(page.getByText('1 of 11')).toBeVisible();
  await expect(log.locator('mark').first()).toHaveText('tick 1');
  await search.fill('');

  // the level filter hides entries (all of this agent's lines are info)
  await page.getByRole('group', { name: 'Levels' }).getByLabel('info').uncheck();
  await expect(page.getByText(/^0 of \d+ lines · ended$/)).toBeVisible();
  await page.getByRole('group', { name: 'Levels' }).getByLabel('info').check();
  await expect(log).toContainText('agent exited with code 0');

  // the diff shows the agent's files; split view works
  await expect(tree.getByRole('button', { name: /added\.txt/ })).toBeVisible();
  await expect(tree.getByRole('button', { name: /README\.md/ })).toBeVisible();
  await expect(diff.getByRole('region', { name: 'src/added.txt' })).toContainText('three');
  await diff.getByLabel('Split').check();
  await expect(diff.locator('.diff-split')).toHaveCount(2);
  await diff.getByLabel('Unified').check();
  await tree.getByRole('button', { name: /README\.md/ }).click();
  await expect(diff.getByRole('region', { name: 'src/added.txt' })).toBeHidden();
  await expect(diff.getByRole('region', { name: 'README.md' })).toContainText('added by the agent');
  await diff.getByRole('button', { name: 'Show all files' }).click();
  await expect(diff.getByRole('region', { name: 'src/added.txt' })).toBeVisible();
  await expect(page.getByRole('cell', { name: 'completed' })).toBeVisible();

  // docs/ui.md's screenshot (test/ui/screenshot.ts)
  await search.fill('tick');
  await search.press('Enter');
  await screenshot(page, 'task');
  await search.fill('');

  // merge (squash) from the dialog: Enter merges
  await page.getByRole('button', { name: 'Merge…' }).click();
  const merge = page.getByRole('dialog', { name: /Merge attempt #1/ });
  await merge.getByLabel(/Squash/).check();
  await merge.getByRole('button', { name: 'Merge', exact: true }).press('Enter');
  await expect(merge).toBeHidden();
  await expect(page.locator('.attempt-header').getByText('merged', { exact: true })).toBeVisible();
  // merged: Merge is no longer offered, and says why
  await expect(page.getByRole('button', { name: 'Merge…' })).toBeDisabled();
  await expect(page.getByRole('button', { name: 'Merge…' })).toHaveAccessibleDescription('Already merged.');
  // the task's status in the board's words (its Done column), the API's word in the tooltip
  const status = page.locator('.task-tags .status');
  await expect(status).toHaveText('Done');
  await expect(status).toHaveAttribute('title', 'Status: completed');
  const detail = await api<{ attempts: { id: string }[] }>('GET', `/tasks/${taskId}`);
  const merged = await api<{ merged: boolean; mergeCommit: string }>('GET', `/attempts/${detail.attempts[0]?.id}`);
  expect(merged.merged).toBe(true);

  // the board shows the card in the done column
  await page.getByRole('link', { name: projectName }).click();
  await expect(page).toHaveURL(new RegExp(`/projects/${projectId}`));
  await expect(page.locator('[data-column="done"]').getByRole('article', { name: 'Add the greeting file', exact: true })).toBeVisible();
});

test('Escape closes the Start dialog (an unknown task\'s address: notFound.spec.ts)', async ({ page }) => {
  const project = await createProject(unique('Task Errors Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Nothing to merge' });
  await page.goto(`/tasks/${task.id}`);
  await page.getByRole('button', { name: 'Start attempt…' }).click();
  const start = page.getByRole('dialog', { name: 'Start an attempt' });
  await expect(start.getByLabel('Agent profile')).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(start).toBeHidden();
});

test('while a start waits for its answer, its button says Starting… (it only went pale)', async ({ page }) => {
  const project = await createProject(unique('Slow Start Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Started slowly', description: 'SLEEP' });
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('heading', { name: 'Started slowly' })).toBeVisible();
  // the start reaches the server at once; its answer is held, as a workflow engine slow to answer holds it
  const answer = await holdAnswers(page, '**/api/tasks/*/start');
  await page.getByRole('button', { name: 'Start attempt…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Start an attempt' });
  await dialog.getByLabel('Agent profile').selectOption('scripted');
  await dialog.getByLabel('Agent profile').press('Enter');
  await expect(dialog.getByRole('button', { name: 'Starting…' })).toBeDisabled();
  answer();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('region', { name: 'Attempt #1' })).toBeVisible();
  await api('POST', `/tasks/${task.id}/cancel`);
});

test('while the attempt is on its way, the Task screen says "Loading the attempt…", and then shows it', async ({ page }) => {
  const project = await createProject(unique('Slow Attempt Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Attempt read slowly' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await attemptCompleted(attemptId);
  // the task (with its attempts' list) answers at once; the selected attempt's own read is held
  const answer = await holdAnswers(page, `**/api/attempts/${attemptId}`);
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('table', { name: 'Attempts' })).toBeVisible();
  const loading = page.getByRole('status').filter({ hasText: 'Loading the attempt…' });
  await expect(loading).toBeVisible();
  await expect(page.getByRole('region', { name: 'Attempt #1' })).toHaveCount(0);
  answer();
  await expect(page.getByRole('region', { name: 'Attempt #1' })).toContainText('completed');
  await expect(loading).toHaveCount(0);
});

test.describe('merge approval gate', () => {
  // the refused merge (409) is logged by the browser as a failed resource
  test.use({ allowConsoleErrors: /status of 409/ });

  test('a pending merge approval blocks the merge and is shown as the gate', async ({ page }) => {
    const project = await createProject(unique('Gated Project'));
    const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Gated change' });
    const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
    await attemptCompleted(attemptId);
    const approval = await api<{ id: string }>('POST', '/approvals', { taskAttemptId: attemptId, type: 'merge', title: 'Ship it?' });

    await page.goto(`/tasks/${task.id}`);
    await page.getByRole('button', { name: 'Merge…' }).click();
    const merge = page.getByRole('dialog', { name: /Merge attempt #1/ });
    await merge.getByRole('button', { name: 'Merge', exact: true }).press('Enter');
    await expect(merge.getByRole('alert')).toContainText(`waits for merge approval ${approval.id}`);
    await expect(merge.getByRole('status')).toContainText('Merge approval pending');
    await expect(merge.getByRole('link', { name: 'Open approvals' })).toBeVisible();
    await page.keyboard.press('Escape');
    await expect(merge).toBeHidden();
    expect((await api<{ merged: boolean }>('GET', `/attempts/${attemptId}`)).merged).toBe(false);
  });
});

test('a merge whose cleanup git refused shows why, and what to do, on the attempt', async ({ page }) => {
  const project = await createProject(unique('Cleanup Error Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Locked worktree', description: 'CONFLICT' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await attemptCompleted(attemptId);
  const { worktreePath } = await api<{ worktreePath: string }>('GET', `/attempts/${attemptId}`);
  // a worktree locked with `git worktree lock`: the merge lands, its cleanup is refused (WORKTREE_LOCKED)
  execFileSync('git', ['-C', project.repoPath, 'worktree', 'lock', '--reason', 'held by the UI test', worktreePath]);

  await page.goto(`/tasks/${task.id}`);
  const panel = page.getByRole('region', { name: 'Attempt #1' });
  await expect(panel.getByRole('status', { name: 'Cleanup' })).toHaveCount(0);
  await page.getByRole('button', { name: 'Merge…' }).click();
  const merge = page.getByRole('dialog', { name: /Merge attempt #1/ });
  await merge.getByLabel('Remove the worktree and branch after merging').check();
  await merge.getByRole('button', { name: 'Merge', exact: true }).click();
  await expect(merge).toBeHidden();
  await expect(panel.locator('.attempt-header').getByText('merged', { exact: true })).toBeVisible();

  // the attempt says so where the merge was done (nothing did: the worktree and branch stayed without a word)
  const note = panel.getByRole('status', { name: 'Cleanup' });
  await expect(note).toContainText('Merged, but the worktree and branch were not removed: the worktree is locked.');
  await expect(note).toContainText(`worktree unlock ${worktreePath}`);
  await expect(note).toContainText('held by the UI test');
  await expect(note).toContainText('then delete the attempt');
  await screenshot(page, 'task-cleanup-error');
  const attempt = await api<{ merged: boolean; worktreePath: string | null; cleanupError: { code: string } | null }>('GET', `/attempts/${attemptId}`);
  expect(attempt).toMatchObject({ merged: true, worktreePath, cleanupError: { code: 'WORKTREE_LOCKED' } });
  // it is the attempt's state, not the merge's answer: still there after a reload
  await page.reload();
  await expect(note).toContainText('the worktree is locked');
});

test('100k log lines: the view stays virtualised, search finds a line deep inside, scrolling is measured', async ({ page }) => {
  test.setTimeout(240_000);
  const N = 100_000;
  const project = await createProject(unique('Long Log Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Long log', description: `FLOOD:${N}` });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await expect.poll(async () => (await api<{ status: string }>('GET', `/attempts/${attemptId}`)).status, { timeout: 180_000, intervals: [1000] }).toBe('completed');

  const t0 = Date.now();
  await page.goto(`/tasks/${task.id}`);
  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText(`line ${N} of ${N}`, { timeout: 60_000 });
  await expect(page.getByText(/^100,00\d of 100,00\d lines · ended$/)).toBeVisible({ timeout: 60_000 });
  const loadedMs = Date.now() - t0;
  // virtualised: a few dozen rows in the DOM, not 100k
  const rows = await log.locator('.log-line').count();
  expect(rows).toBeLessThan(200);

  const search = page.getByLabel('Search log');
  const s0 = Date.now();
  await search.fill(`line ${N / 2} of`);
  await expect(page.getByText('0 of 1', { exact: true })).toBeVisible();
  await search.press('Enter');
  await expect(log.locator('.log-current')).toContainText(`line ${N / 2} of ${N}`);
  const searchMs = Date.now() - s0;
  await expect(page.getByRole('button', { name: 'Jump to latest' })).toBeVisible();

  // scroll through the whole log for one second, frame by frame
  const frames = await log.evaluate(
    (el) =>
      new Promise<{ count: number; longest: number }>((resolve) => {
        const start = performance.now();
        let last = start;
        let count = 0;
        let longest = 0;
        const step = (now: number) => {
          longest = Math.max(longest, now - last);
          last = now;
          count++;
          el.scrollTop = ((now - start) / 1000) * 0.9 * el.scrollHeight;
          if (now - start < 1000) requestAnimationFrame(step);
          else resolve({ count, longest });
        };
        requestAnimationFrame(step);
      }),
  );
  process.stdout.write(
    `ui: 100k-line log: loaded in ${loadedMs} ms, ${rows} rows in the DOM, search + jump ${searchMs} ms, scrolling ${frames.count} frames/s (longest frame ${frames.longest.toFixed(0)} ms)\n`,
  );
  expect(await log.locator('.log-line').count()).toBeLessThan(200);
  await page.getByRole('button', { name: 'Jump to latest' }).click();
  await expect(log).toContainText('agent exited with code 0');
});

test('compare two attempts; a follow-up sent from the screen runs and its log shows; a draft is kept', async ({ page }) => {
  test.setTimeout(180_000); // two attempts and a follow-up on a shared 2-core machine
  const project = await createProject(unique('Follow-up Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Two tries' });
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
    await attemptCompleted(attemptId);
    ids.push(attemptId);
  }

  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('table', { name: 'Attempts' }).getByRole('columnheader')).toHaveText(['Compare', 'Attempt', 'Agent', 'Status', 'Duration', 'Cost', 'Changes']);
  // off until two are ticked, saying so (it was only off)
  const compareButton = page.getByRole('button', { name: 'Compare selected' });
  await expect(compareButton).toBeDisabled();
  await expect(compareButton).toHaveAccessibleDescription('Tick two attempts to compare.');
  await page.getByLabel('Compare attempt #1').check();
  await expect(compareButton).toBeDisabled();
  await page.getByLabel('Compare attempt #2').check();
  await expect(compareButton).not.toHaveAccessibleDescription('Tick two attempts to compare.');
  await compareButton.click();
  const compare = page.getByRole('dialog', { name: 'Compare attempts' });
  await expect(compare.getByRole('table', { name: 'Compared attempts' }).getByRole('row')).toHaveCount(3);
  await expect(compare.getByRole('heading', { name: 'In both' })).toBeVisible();
  await expect(compare).toContainText('src/added.txt');
  await page.keyboard.press('Escape');
  await expect(compare).toBeHidden();

  // the latest attempt (#2) is selected; its follow-up runs as a second run of its log
  await expect(page.getByRole('heading', { name: /Attempt #2/ })).toBeVisible();
  const prompt = page.getByLabel('Prompt', { exact: true });
  // the draft's POST is answered only after the next prompt is typed: the draft arrives on the drafts stream first,
  // and the late answer must not wipe what was typed meanwhile (it did: this test's flake in CI)
  const answerDraft = await holdAnswers(page, '**/api/task-attempts/*/follow-up-draft');
  await prompt.fill('keep this for later');
  await page.getByRole('button', { name: 'Save draft' }).click();
  await expect(page.getByRole('list').filter({ hasText: 'keep this for later' })).toContainText('draft');
  await prompt.fill('FOLLOWUP write notes');
  answerDraft();
  await expect(page.getByRole('button', { name: 'Save draft' })).toBeEnabled();
  await expect(prompt).toHaveValue('FOLLOWUP write notes');
  await page.unrouteAll();
  await prompt.press('Control+Enter');
  await expect(page.getByLabel('Run', { exact: true })).toBeVisible({ timeout: 30_000 });
  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText('follow-up noted', { timeout: 30_000 });
  await page.getByLabel('Run', { exact: true }).selectOption({ index: 0 });
  await expect(log).toContainText('created src/added.txt');
  expect(await api<{ id: string }[]>('GET', `/processes?attemptId=${ids[1]}`)).toHaveLength(2);
});

test('the diff follows a follow-up run of a completed attempt, without a reload', async ({ page }) => {
  test.setTimeout(120_000);
  // a name of its own at each run: projects' names are unique, and a second run on the same server (--repeat-each) was a 409
  const project = await createProject(`Diff Follow-up Project ${Date.now()}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Edit, then note' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await attemptCompleted(attemptId);

  // the diff's stream of the first run: the server ends it, the attempt being finished
  const firstStreamEnded = page
    .waitForResponse((r) => new URL(r.url()).pathname === `/api/events/task-attempts/${attemptId}/diff`)
    .then((r) => r.finished());
  await page.goto(`/tasks/${task.id}`);
  const diff = page.getByRole('region', { name: 'Diff' });
  const tree = diff.getByRole('navigation', { name: 'Changed files' });
  await expect(tree.getByRole('button', { name: /added\.txt/ })).toBeVisible({ timeout: 15_000 });
  await expect(diff).toContainText('2 files changed');
  // the first run's stream has ended (the attempt completed) before the follow-up is sent
  await firstStreamEnded;

  const prompt = page.getByLabel('Prompt', { exact: true });
  await prompt.fill('FOLLOWUP write notes');
  await page.getByRole('button', { name: 'Send follow-up' }).click();
  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText('follow-up noted', { timeout: 30_000 });
  // the API has the follow-up's file; the open diff shows it too, with no reload
  await expect.poll(async () => (await api<{ diff: string }>('GET', `/attempts/${attemptId}/diff?format=unified`)).diff, { timeout: 30_000, intervals: [250] }).toContain('notes.txt');
  await expect(tree.getByRole('button', { name: /notes\.txt/ })).toBeVisible({ timeout: 15_000 });
  await expect(diff).toContainText('3 files changed');
  await expect(diff.getByRole('region', { name: 'notes.txt' })).toContainText('FOLLOWUP write notes');
});

test('Ctrl+Enter while a follow-up waits for its answer sends nothing more (it sent the prompt twice)', async ({ page }) => {
  test.setTimeout(120_000);
  const project = await createProject(unique('Follow-up Once Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'One note only' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await attemptCompleted(attemptId);

  await page.goto(`/tasks/${task.id}`);
  const sent: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === `/api/attempts/${attemptId}/follow-up`) sent.push(r.url());
  });
  const answer = await holdAnswers(page, `**/api/attempts/${attemptId}/follow-up`);
  const prompt = page.getByLabel('Prompt', { exact: true });
  await prompt.fill('FOLLOWUP once');
  await prompt.press('Control+Enter');
  await expect(page.getByRole('button', { name: 'Send follow-up' })).toBeDisabled();
  await prompt.press('Control+Enter');
  await prompt.press('Control+Enter');
  answer();
  await expect(page.getByRole('status').filter({ hasText: 'Follow-up sent' })).toBeVisible();
  expect(sent).toHaveLength(1);
  await page.unrouteAll();
  // one follow-up run: the attempt's second process, and no third
  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText('follow-up noted', { timeout: 30_000 });
  await attemptCompleted(attemptId);
  expect((await api<{ id: string }[]>('GET', `/processes?attemptId=${attemptId}`)).length).toBe(2);
});

test('a queue of follow-ups runs one after the other; a prompt queued while it was being sent stays queued', async ({ page }) => {
  test.setTimeout(120_000);
  const project = await createProject(unique('Queue Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Queue two notes' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await attemptCompleted(attemptId);

  await page.goto(`/tasks/${task.id}`);
  const prompt = page.getByLabel('Prompt', { exact: true });
  for (const text of ['FOLLOWUP first note', 'FOLLOWUP second note']) {
    await prompt.fill(text);
    await page.getByRole('button', { name: 'Add to queue' }).click();
  }
  const queue = page.getByRole('list').filter({ hasText: 'FOLLOWUP first note' });
  await expect(queue.getByRole('listitem')).toHaveCount(2);
  // the queue's POST is answered only after a third prompt was queued
  const answerQueue = await holdAnswers(page, '**/api/task-attempts/*/follow-up-queue');
  await page.getByRole('button', { name: 'Run queue (2)' }).click();
  await expect(page.getByRole('button', { name: 'Remove queued prompt 1' })).toBeDisabled();
  await prompt.fill('FOLLOWUP for later');
  await page.getByRole('button', { name: 'Add to queue' }).click();
  answerQueue();
  await expect(page.getByRole('button', { name: 'Run queue (1)' })).toBeVisible();
  await expect(page.getByRole('list').filter({ hasText: 'FOLLOWUP for later' }).getByRole('listitem')).toHaveCount(1);
  await page.unrouteAll();

  // the two sent prompts ran, in order, as two more runs of the attempt
  await expect
    .poll(async () => (await api<{ diff: string }>('GET', `/attempts/${attemptId}/diff?format=unified`)).diff, { timeout: 60_000, intervals: [250] })
    .toMatch(/FOLLOWUP first note[\s\S]*FOLLOWUP second note/);
  await expect.poll(async () => (await api<{ id: string }[]>('GET', `/processes?attemptId=${attemptId}`)).length, { timeout: 30_000, intervals: [250] }).toBe(3);
  expect((await api<{ diff: string }>('GET', `/attempts/${attemptId}/diff?format=unified`)).diff).not.toContain('for later');
});

test('the diff of an attempt that changed nothing lists no file; one changed file is "1 file changed"; a failed attempt\'s changes are merged only after a warning', async ({ page }) => {
  test.setTimeout(120_000);
  const project = await createProject(unique('Diff Count Project'));
  // WIDE:40: its log has a line of 40 words, longer than the log box is wide
  const noop = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Change nothing', description: 'NOOP WIDE:40' });
  const one = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Change one file', description: 'CONFLICT' });
  const failing = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Fail at once', description: 'FAIL' });
  const halfDone = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Fail half way', description: 'EDITFAIL' });
  const started: string[] = [];
  for (const t of [noop, one, failing, halfDone]) started.push((await api<{ attemptId: string }>('POST', `/tasks/${t.id}/start`, { llm: 'scripted' })).attemptId);
  for (const id of started.slice(0, 2)) await attemptCompleted(id);
  for (const id of started.slice(2)) {
    await expect.poll(async () => (await api<{ status: string }>('GET', `/attempts/${id}`)).status, { timeout: 60_000, intervals: [250] }).toBe('failed');
  }

  await page.goto(`/tasks/${noop.id}`);
  // its log, a few lines of an ended run, is in a box as high as its lines (it sat in a 420 px box, empty below), with
  // 6 px above the first and under the last (they touched its edges)
  const log = page.getByRole('log', { name: 'Attempt log' });
  await expect(log).toContainText('agent exited with code 0');
  const logBox = () =>
    log.evaluate((el) => ({ height: el.clientHeight, content: el.scrollHeight, linesHigh: [...el.querySelectorAll<HTMLElement>('.log-line')].reduce((h, line) => h + line.offsetHeight, 12) }));
  await expect.poll(async () => { const b = await logBox(); return b.height === b.content && b.height === b.linesHigh; }).toBe(true);
  const [first, last, logRect] = [await log.locator('.log-line').first().boundingBox(), await log.locator('.log-line').last().boundingBox(), await log.boundingBox()];
  expect((first?.y ?? 0) - (logRect?.y ?? 0)).toBeCloseTo(6, 0);
  expect((logRect?.y ?? 0) + (logRect?.height ?? 0) - (last?.y ?? 0) - (last?.height ?? 0)).toBeCloseTo(6, 0);
  expect((await logBox()).height).toBeLessThan(420);
  // a line longer than the box wraps in it at a desktop's width too, where the log is half the page wide (it was cut
  // at the box's right edge, and the box scrolled sideways), the lines after its first indented: it reads as one line
  const wideLine = log.locator('.log-line', { hasText: 'word40' });
  const expectHanging = async (line: typeof wideLine) => {
    const starts = await lineStarts(line);
    expect(starts.length, `line starts ${starts.join(', ')}`).toBeGreaterThan(1);
    for (const x of starts.slice(1)) expect(x, `line starts ${starts.join(', ')}`).toBeGreaterThan((starts[0] ?? 0) + 10);
    expect(await log.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  };
  await expectHanging(wideLine);
  const diff = page.getByRole('region', { name: 'Diff' });
  await expect(diff).toContainText('0 files changed');
  await expect(diff).toContainText('No changes');
  await expect(diff.getByRole('navigation', { name: 'Changed files' })).toHaveCount(0);
  await expect(diff).not.toContainText('No text changes');
  // nothing to merge (the task service's no_changes): Merge is not offered, and says why
  const mergeButton = page.getByRole('button', { name: 'Merge…' });
  await expect(mergeButton).toBeDisabled();
  await expect(mergeButton).toHaveAccessibleDescription('Nothing to merge: the attempt made no changes.');
  await expect(page.getByText('Nothing to merge: the attempt made no changes.')).toBeVisible();
  await expect(api('POST', `/attempts/${started[0]}/merge`, { strategy: 'ff' })).rejects.toThrow(/409.*Nothing to merge/);
  // nor a pull request: its branch has no commit the base lacks, which the code host refuses after the push
  const prButton = page.getByRole('button', { name: 'Create PR…' });
  await expect(prButton).toBeDisabled();
  await expect(prButton).toHaveAccessibleDescription(NO_PR);

  // a failed attempt that left nothing says so, and what to do (it said "the attempt made no changes", as if it had
  // done its work and found nothing to do)
  expect(await api<{ filesChanged: number }>('GET', `/attempts/${started[2]}`)).toMatchObject({ filesChanged: 0 });
  await page.goto(`/tasks/${failing.id}`);
  await expect(page.locator('.attempt-header').getByText('failed', { exact: true })).toBeVisible();
  await expect(mergeButton).toBeDisabled();
  await expect(mergeButton).toHaveAccessibleDescription(`Nothing to merge: ${FAILED_NOTHING}`);
  await expect(prButton).toHaveAccessibleDescription(`No pull request to open: ${FAILED_NOTHING}`);
  // on a phone, Merge… and Create PR… share a row, the reasons under them (each reason beside its button left each
  // button alone on a row)
  await page.setViewportSize({ width: 375, height: 800 });
  const [mergeAt375, prAt375] = [await mergeButton.boundingBox(), await prButton.boundingBox()];
  expect(prAt375?.y).toBe(mergeAt375?.y);
  for (const reason of await page.locator('.attempt-header .merge-refusal').all()) expect((await reason.boundingBox())?.y).toBeGreaterThan((mergeAt375?.y ?? 0) + (mergeAt375?.height ?? 0));
  await page.setViewportSize({ width: 1360, height: 860 });
  // what it says to do can be done: the follow-up is offered
  await page.getByLabel('Prompt', { exact: true }).fill('FOLLOWUP try again');
  await expect(page.getByRole('button', { name: 'Send follow-up' })).toBeEnabled();
  await expect(api('POST', `/attempts/${started[2]}/merge`, { strategy: 'ff' })).rejects.toThrow(/409.*Nothing to merge/);

  // a failed attempt that left changes (the scripted agent's EDITFAIL: its edit, then exit 3) can be merged: the
  // service merges what it committed. Its Merge dialog says first that it failed; Cancel merges nothing, Merge does
  const halfAttempt = await api<{ filesChanged: number; branch: string; baseBranch: string }>('GET', `/attempts/${started[3]}`);
  expect(halfAttempt.filesChanged).toBe(2);
  const baseHas = (file: string) => {
    try {
      return execFileSync('git', ['-C', project.repoPath, 'show', `${halfAttempt.baseBranch}:${file}`], { encoding: 'utf8', stdio: 'pipe' });
    } catch {
      return null;
    }
  };
  await page.goto(`/tasks/${halfDone.id}`);
  await expect(page.locator('.attempt-header').getByText('failed', { exact: true })).toBeVisible();
  await expect(mergeButton).toBeEnabled();
  await expect(mergeButton).toHaveAccessibleDescription('');
  const FAILED_WARNING = 'The attempt failed: these are the changes it left before it stopped. Check its log and diff before merging them.';
  await mergeButton.click();
  const mergeDialog = page.getByRole('dialog', { name: 'Merge attempt #1' });
  await expect(mergeDialog).toContainText(FAILED_WARNING);
  await mergeDialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(mergeDialog).toBeHidden();
  expect(await api<{ merged: boolean }>('GET', `/attempts/${started[3]}`)).toMatchObject({ merged: false });
  expect(baseHas('src/added.txt')).toBeNull();
  await mergeButton.click();
  await expect(mergeDialog).toContainText(FAILED_WARNING);
  await mergeDialog.getByRole('button', { name: 'Merge', exact: true }).click();
  await expect(mergeDialog).toBeHidden();
  await expect(page.locator('.attempt-header').getByText('merged', { exact: true })).toBeVisible();
  expect(await api<{ merged: boolean; status: string }>('GET', `/attempts/${started[3]}`)).toMatchObject({ merged: true, status: 'failed' });
  // the agent's changes are on the base branch now
  expect(baseHas('src/added.txt')).toBe('one\ntwo\nthree\n');
  expect(baseHas('README.md')).toContain('added by the agent');
  await expect(mergeButton).toHaveAccessibleDescription('Already merged.');
  // its log has three sources (armada, stderr, stdout): in a 300 px window more than fit, and the row scrolls inside its
  // panel (a fieldset is as wide as what it holds: the row ran past the panel and the window, stdout cut off), taking
  // Tab while it does, so the keyboard scrolls it too (nothing in it could be reached but its checkboxes)
  const sources = page.getByRole('group', { name: 'Sources' });
  await expect(sources.getByRole('checkbox')).toHaveCount(3);
  await expect(sources).not.toHaveAttribute('tabindex');
  await page.setViewportSize({ width: 300, height: 800 });
  await expect(sources).toHaveAttribute('tabindex', '0');
  const logPanel = page.locator('section.panel').filter({ has: page.getByRole('log', { name: 'Attempt log' }) });
  const [row, panelBox] = [await sources.boundingBox(), await logPanel.boundingBox()];
  expect((row?.x ?? 0) + (row?.width ?? 0)).toBeLessThanOrEqual((panelBox?.x ?? 0) + (panelBox?.width ?? 0));
  await page.getByRole('group', { name: 'Levels' }).getByLabel('error').focus();
  await page.keyboard.press('Tab');
  await expect(sources).toBeFocused();
  await page.keyboard.press('ArrowRight');
  await expect.poll(() => sources.evaluate((el) => el.scrollLeft)).toBeGreaterThan(0);
  await page.setViewportSize({ width: 1360, height: 860 });
  await expect(sources).not.toHaveAttribute('tabindex');

  await page.goto(`/tasks/${one.id}`);
  await expect(diff.getByRole('navigation', { name: 'Changed files' }).getByRole('button')).toHaveText([/README\.md/]);
  await expect(diff).toContainText('1 file changed');
  await expect(diff).not.toContainText('1 files changed');
  await expect(mergeButton).toBeEnabled();
  await expect(mergeButton).toHaveAccessibleDescription('');
  await expect(prButton).toBeEnabled();
  await expect(prButton).toHaveAccessibleDescription('');

  // in a phone's window the file tree stands above the file, and the code has most of the box's width: beside the
  // tree, the code had ~40 px, and a line broke every few letters into a column as tall as the screen
  await page.setViewportSize({ width: 390, height: 844 });
  // the attempts table stacks a row's columns under its number (its status was cut at the window's edge, the rest past it)
  const attemptsTable = page.getByRole('table', { name: 'Attempts' });
  await expect(attemptsTable.getByRole('list', { name: 'About attempt #1' })).toContainText('completed');
  expect(await attemptsTable.locator('xpath=..').evaluate((box) => box.scrollWidth - box.clientWidth)).toBeLessThanOrEqual(0);
  const tree = diff.getByRole('navigation', { name: 'Changed files' });
  const file = diff.getByRole('region', { name: 'README.md' });
  await expect.poll(async () => {
    const [t, f] = [await tree.boundingBox(), await file.boundingBox()];
    return !!t && !!f && t.y + t.height <= f.y;
  }).toBe(true);
  const line = file.locator('td.diff-code', { hasText: 'line one rewritten by the agent' });
  const [code, box] = [await line.boundingBox(), await file.boundingBox()];
  expect(code?.width).toBeGreaterThan((box?.width ?? 0) * 0.6);
  expect(code?.height).toBeLessThan(40); // 12 px text, 1.5 line height: 31 letters on two lines at most
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
  // the log's ↑ and ↓ stay side by side (↓ wrapped onto the next row, under the search field)
  const [up, down] = [await page.getByRole('button', { name: 'Previous match' }).boundingBox(), await page.getByRole('button', { name: 'Next match' }).boundingBox()];
  expect(down?.y).toBe(up?.y);
  // and on the search field's row, at 375 px too: the field narrows (they wrapped onto a row of their own under it)
  await page.setViewportSize({ width: 375, height: 844 });
  const [field, upAt375] = [await page.getByRole('searchbox').boundingBox(), await page.getByRole('button', { name: 'Previous match' }).boundingBox()];
  const upMiddle = (upAt375?.y ?? 0) + (upAt375?.height ?? 0) / 2;
  expect(upMiddle).toBeGreaterThan(field?.y ?? 0);
  expect(upMiddle).toBeLessThan((field?.y ?? 0) + (field?.height ?? 0));
  // a long log line wraps in the box (it was cut at its right edge and scrolled sideways), its uuid broken where it
  // must; a search still marks its match in view
  const startedLine = log.locator('.log-line', { hasText: 'agent started in' });
  await expect.poll(async () => (await startedLine.boundingBox())?.height ?? 0).toBeGreaterThan(20);
  await expectHanging(startedLine);
  await page.getByLabel('Search log').fill('exited with');
  await page.getByLabel('Search log').press('Enter');
  await expect(log.locator('.log-current')).toContainText('agent exited with code');
  const [current, logAt375] = [await log.locator('.log-current').boundingBox(), await log.boundingBox()];
  expect(current?.y ?? 0).toBeGreaterThanOrEqual(logAt375?.y ?? 0);
  expect((current?.y ?? 0) + (current?.height ?? 0)).toBeLessThanOrEqual((logAt375?.y ?? 0) + (logAt375?.height ?? 0));
  // the follow-up's Save draft and Add to queue side by side under Send follow-up (Add to queue wrapped alone)
  const [saveDraft, addToQueue] = [await page.getByRole('button', { name: 'Save draft' }).boundingBox(), await page.getByRole('button', { name: 'Add to queue' }).boundingBox()];
  expect(addToQueue?.y).toBe(saveDraft?.y);
  await page.getByLabel('Search log').fill('');
  await page.setViewportSize({ width: 390, height: 844 });
  await diff.scrollIntoViewIfNeeded();
  await screenshot(page, 'narrow-task-diff', { fullPage: false });
});

test('a 500-character title (and a long description) without a space wraps: the task page does not get wider than the window', async ({ page }) => {
  const project = await createProject(unique('Long Title Project'));
  const title = `Unbroken${'x'.repeat(492)}`;
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title, description: `Described${'y'.repeat(992)}` });
  await page.goto(`/tasks/${task.id}`);
  const heading = page.getByRole('heading', { name: title, level: 1 });
  await expect(heading).toBeVisible();
  const box = await heading.boundingBox();
  expect(box?.x ?? 0).toBeGreaterThanOrEqual(0);
  expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(1360);
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
});

test('with no assignee and no default profile, the Start dialog offers no Default (it could only be refused) and picks a profile', async ({ page }) => {
  const project = await createProject(unique('No Default Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Nobody assigned', description: 'NOOP' });
  await page.goto(`/tasks/${task.id}`);
  await page.getByRole('button', { name: 'Start attempt…' }).click();
  const start = page.getByRole('dialog', { name: 'Start an attempt' });
  const profile = start.getByLabel('Agent profile', { exact: true });
  // it offered "Default (task assignee or project default)", chosen, and the first Start of a new project was refused
  await expect(profile).toHaveValue('scripted');
  await expect(profile.locator('option')).toHaveText(['scripted']);
  await expect(profile).toHaveAccessibleDescription('No default: this task has no assignee and its project no default agent profile.');
  await profile.press('Enter');
  await expect(start).toBeHidden();
  await expect(page.getByRole('cell', { name: 'scripted' })).toBeVisible();
  const attempts = await api<{ llm: string }[]>('GET', `/tasks/${task.id}/attempts`);
  expect(attempts.map((a) => a.llm)).toEqual(['scripted']);
});

test.describe('starting with no agent to run', () => {
  // the refused start (409) is logged by the browser
  test.use({ allowConsoleErrors: /409/ });

  test('a default removed elsewhere while the Start dialog is open: it says so once, inline, in the board\'s words', async ({ page }) => {
    const project = await createProject(unique('No Agent Project'));
    await api('PATCH', `/projects/${project.id}`, { defaultLLM: 'scripted' });
    const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Nobody to run it' });
    await page.goto(`/tasks/${task.id}`);
    await page.getByRole('button', { name: 'Start attempt…' }).click();
    const start = page.getByRole('dialog', { name: 'Start an attempt' });
    await expect(start.getByLabel('Agent profile')).toHaveValue('');
    await expect(start.getByLabel('Agent profile').locator('option:checked')).toHaveText('Default (scripted)');
    await api('PATCH', `/projects/${project.id}`, { defaultLLM: null });
    await start.getByRole('button', { name: 'Start attempt' }).click();
    await expect(start.getByRole('alert')).toHaveText('Choose an agent profile: this task has no assignee and its project no default agent profile.');
    // once: no toast behind the dialog
    await expect(page.getByRole('alert')).toHaveCount(1);
    await expect(start).not.toContainText('llm');
    await expect(start.getByLabel('Agent profile')).toBeFocused();
    // the field it names is in its error state too, and described by the message
    await expectErrorState(start.getByLabel('Agent profile'));
    await expect(start.getByLabel('Agent profile')).toHaveAccessibleDescription('Choose an agent profile: this task has no assignee and its project no default agent profile.');
    await expectNoErrorState(start.getByLabel('Extra instructions (optional)'));
    expect(await api<unknown[]>('GET', `/tasks/${task.id}/attempts`)).toHaveLength(0);
  });

  test("a task assigned to a person (no configured agent): the default's refusal (AGENT_UNKNOWN) is about the profile field too", async ({ page }) => {
    const project = await createProject(unique('Person Assignee Project'));
    const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Assigned to a person', assignee: 'alice' });
    await page.goto(`/tasks/${task.id}`);
    await page.getByRole('button', { name: 'Start attempt…' }).click();
    const start = page.getByRole('dialog', { name: 'Start an attempt' });
    await expect(start.getByLabel('Agent profile').locator('option:checked')).toHaveText('Default (alice)');
    await start.getByRole('button', { name: 'Start attempt' }).click();
    const said = "Choose an agent profile: the default (the task's assignee, else the project's default agent profile) is not a configured agent profile.";
    await expect(start.getByRole('alert')).toHaveText(said);
    await expect(start.getByLabel('Agent profile')).toBeFocused();
    await expectErrorState(start.getByLabel('Agent profile'));
    await expect(start.getByLabel('Agent profile')).toHaveAccessibleDescription(said);
    // choosing a profile starts it
    await start.getByLabel('Agent profile').selectOption('scripted');
    await start.getByRole('button', { name: 'Start attempt' }).click();
    await expect(start).toBeHidden();
    expect((await api<{ llm: string }[]>('GET', `/tasks/${task.id}/attempts`)).map((a) => a.llm)).toEqual(['scripted']);
  });
});

test('cancel a running attempt from the screen (Enter confirms); Merge and Create PR are then disabled, saying why', async ({ page }) => {
  const project = await createProject(unique('Cancel Project'));
  // the agent prints on stderr once this file exists: a second log source coming mid-run
  const stderrOn = path.join(os.tmpdir(), `armada-ui-stderr-${Date.now().toString(36)}`);
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Long sleeper', description: `SLEEP STDERR-ON:${stderrOn}` });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  // where the log box stands in its panel, at every frame from the first: the Sources filter appeared when a second
  // source came mid-run, and pushed the box down
  await page.addInitScript(() => {
    const w = window as unknown as { logTops: number[] };
    w.logTops = [];
    const look = () => {
      const box = document.querySelector('.log-scroll');
      const view = box?.closest('.log-view');
      if (box && view) {
        const top = Math.round(box.getBoundingClientRect().top - view.getBoundingClientRect().top);
        if (w.logTops.at(-1) !== top) w.logTops.push(top);
      }
      requestAnimationFrame(look);
    };
    requestAnimationFrame(look);
  });
  // the attempt's own read comes 0.7 s after the task's (as on a slow network): the panel under its title then
  // counted from a later read, on a timer started later, than the attempts table, and the two showed different seconds
  const attemptRead = await holdAnswers(page, new RegExp(`/api/attempts/${attemptId}$`));
  setTimeout(attemptRead, 700);
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('log', { name: 'Attempt log' })).toContainText('still working', { timeout: 30_000 });
  const sources = page.getByRole('group', { name: 'Sources' });
  await expect(sources).toContainText('stdout only, so far');
  fs.writeFileSync(stderrOn, '');
  await expect(page.getByRole('log', { name: 'Attempt log' })).toContainText('a late note on stderr');
  await expect(sources.getByRole('checkbox')).toHaveCount(2);
  fs.rmSync(stderrOn, { force: true });
  await expect(page.getByRole('button', { name: 'Create PR…' })).toHaveAccessibleDescription('Open a pull request once the attempt has finished.');
  // its duration counts while it runs, in the table and under the attempt's title (both stayed at the value read
  // when the screen opened: "0.7 s" for a run of minutes)
  const durationCell = page.getByRole('table', { name: 'Attempts' }).getByRole('row').nth(1).getByRole('cell').nth(4);
  const seconds = async () => Number(/^(\d+) s$/.exec((await durationCell.textContent()) ?? '')?.[1] ?? Number.NaN);
  const first = await seconds();
  expect(first).toBeGreaterThanOrEqual(0);
  await expect.poll(seconds, { timeout: 5_000 }).toBeGreaterThanOrEqual(first + 2);
  await expect(page.locator('.attempt-meta')).toContainText(/ · \d+ s · /);
  // the table and the line under the attempt's title show one clock (they were two reads, ~1 s apart): read together,
  // in one frame, several times over three seconds
  for (let i = 0; i < 7; i++) {
    const [cell, meta] = await page.evaluate(() => [
      document.querySelector('table[aria-label="Attempts"] tbody tr td:nth-child(5)')?.textContent ?? '',
      /· (\d+ s) ·/.exec(document.querySelector('.attempt-meta')?.textContent ?? '')?.[1] ?? '',
    ]);
    expect(cell).toMatch(/^\d+ s$/);
    expect(meta).toBe(cell);
    await page.waitForTimeout(450);
  }
  await page.getByRole('button', { name: 'Cancel attempt' }).click();
  const confirm = page.getByRole('dialog', { name: 'Cancel attempt' });
  await page.keyboard.press('Enter');
  await expect(confirm).toBeHidden();
  await expect(page.locator('.attempt-header').getByText('cancelled', { exact: true })).toBeVisible();
  const cancelled = await api<{ status: string; filesChanged: number }>('GET', `/attempts/${attemptId}`);
  expect(cancelled).toMatchObject({ status: 'cancelled', filesChanged: 0 });
  // cancelled before any change was committed: the task service would refuse a merge (no_changes), so the screen
  // does not offer one (it did: Merge… was enabled on the cancelled attempt with its 0 files changed)
  const mergeButton = page.getByRole('button', { name: 'Merge…' });
  await expect(mergeButton).toBeDisabled();
  await expect(mergeButton).toHaveAccessibleDescription(`Nothing to merge: ${CANCELLED_NOTHING}`);
  // nor a pull request (Create PR… was enabled, and its push and the code host's refusal were left to find out)
  const prButton = page.getByRole('button', { name: 'Create PR…' });
  await expect(prButton).toBeDisabled();
  await expect(prButton).toHaveAccessibleDescription(`No pull request to open: ${CANCELLED_NOTHING}`);
  await expect(page.getByText(`No pull request to open: ${CANCELLED_NOTHING}`)).toBeVisible();
  // nor a follow-up, saying why (Send was only off)
  await page.getByLabel('Prompt', { exact: true }).fill('FOLLOWUP too late');
  const sendButton = page.getByRole('button', { name: 'Send follow-up' });
  await expect(sendButton).toBeDisabled();
  await expect(sendButton).toHaveAccessibleDescription('A cancelled attempt takes no follow-up: start a new attempt to go on.');
  await screenshot(page, 'task-cancelled-no-merge');
  // the second source came while it ran (stderr, after stdout): the log box never moved
  expect(await page.evaluate(() => (window as unknown as { logTops: number[] }).logTops)).toHaveLength(1);
  await expect(api('POST', `/attempts/${attemptId}/merge`, { strategy: 'ff' })).rejects.toThrow(/409.*Nothing to merge/);
});

test('Cancel task asks first, as Cancel attempt does (it stopped every running attempt at one click)', async ({ page }) => {
  const project = await createProject(unique('Cancel Task Project'));
  const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Sleeper to stop', description: 'SLEEP' });
  const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
  await page.goto(`/tasks/${task.id}`);
  await expect(page.getByRole('log', { name: 'Attempt log' })).toContainText('still working', { timeout: 30_000 });
  await page.getByRole('button', { name: 'Cancel task' }).click();
  const confirm = page.getByRole('dialog', { name: 'Cancel task' });
  await expect(confirm).toContainText('Stop the agent of the running attempt of “Sleeper to stop”? Its worktree stays.');
  // Escape stops nothing
  await page.keyboard.press('Escape');
  await expect(confirm).toBeHidden();
  expect(['created', 'running']).toContain((await api<{ status: string }>('GET', `/attempts/${attemptId}`)).status);
  // Enter confirms
  await page.getByRole('button', { name: 'Cancel task' }).click();
  await expect(confirm).toBeVisible();
  await page.keyboard.press('Enter');
  await expect(confirm).toBeHidden();
  await expect.poll(async () => (await api<{ status: string }>('GET', `/attempts/${attemptId}`)).status, { timeout: 30_000, intervals: [250] }).toBe('cancelled');
  await expect(page.locator('.attempt-header').getByText('cancelled', { exact: true })).toBeVisible();
});

test.describe('an attempt cancelled elsewhere while the Cancel dialog is open', () => {
  // the refused cancel (409) is logged by the browser as a failed resource
  test.use({ allowConsoleErrors: /status of 409/ });

  test('Enter says so in the dialog, once, not in a toast under its backdrop', async ({ page }) => {
    const project = await createProject(unique('Cancelled Twice Project'));
    const task = await api<{ id: string }>('POST', '/tasks', { projectId: project.id, title: 'Sleeper cancelled twice', description: 'SLEEP' });
    const { attemptId } = await api<{ attemptId: string }>('POST', `/tasks/${task.id}/start`, { llm: 'scripted' });
    await page.goto(`/tasks/${task.id}`);
    await expect(page.getByRole('log', { name: 'Attempt log' })).toContainText('still working', { timeout: 30_000 });
    await page.getByRole('button', { name: 'Cancel attempt' }).click();
    const confirm = page.getByRole('dialog', { name: 'Cancel attempt' });
    await expect(confirm).toBeVisible();
    // another operator (another tab, the API) cancels it first
    await api('POST', `/attempts/${attemptId}/cancel`);
    await page.keyboard.press('Enter');
    await expect(confirm.getByRole('alert')).toHaveText(`Attempt ${attemptId} is already cancelled`);
    await expect(page.locator('.toast')).toHaveCount(0);
    await page.keyboard.press('Escape');
    await expect(confirm).toBeHidden();
    await expect(page.locator('.attempt-header').getByText('cancelled', { exact: true })).toBeVisible();
  });
});
