/** The attempt engine end to end over HTTP with a scripted agent: run, logs, diff, branches, merge strategies, cleanup. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../support/harness';
import { attemptStackForFile, gitOk, gitOut, recordHistory } from '../support/attemptHelpers';

const h = attemptStackForFile();

const ndjson = (body: string) => body.split('\n').filter(Boolean).map((l) => JSON.parse(l));

/** The try numbers of an attempt's prepareWorktree activity, from its workflow history. */
async function prepareTries(attemptId: string): Promise<number[]> {
  const history = await (await h.stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`).fetchHistory();
  const scheduled = new Set(
    (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'prepareWorktree').map((e) => String(e.eventId)),
  );
  const tries = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes && scheduled.has(String(e.activityTaskStartedEventAttributes.scheduledEventId)));
  return tries.map((e) => Number(e.activityTaskStartedEventAttributes?.attempt));
}

describe('attempt engine', () => {
  test('scripted agent: start → running → completed; logs, diff, branches, ff merge', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Add a file', 'please edit');
    const started = await h.start(taskId);
    expect(started.status).toBe('running');
    expect(started.processId).toBeTruthy();
    const task1 = (await h.inject('GET', `/api/tasks/${taskId}`)).json().data;
    expect(task1.status).toBe('in_progress');

    const a = await h.until(started.attemptId, ['completed', 'failed']);
    expect(a).toMatchObject({ status: 'completed', llm: 'scripted', taskId, number: 1, processId: started.processId });
    expect(a.branch).toBe(`armada/task-${taskId}-attempt-1`);
    expect(a.changes).toEqual({ filesChanged: 2, filesCreated: 1, filesModified: 1, filesDeleted: 0, linesAdded: 4, linesRemoved: 0 });
    expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('review');

    const rawLogs = await h.inject('GET', `/api/attempts/${a.id}/logs`);
    const logs = ndjson(rawLogs.body);
    const messages = logs.map((l) => l.message);
    expect(messages).toEqual(expect.arrayContaining(['edited README.md', 'created src/added.txt', 'done', 'prompt has 23 chars; env prompt matches: true']));
    expect(logs[0]).toEqual(expect.objectContaining({ level: 'info', timestamp: expect.any(String) }));
    const errorsOnly = ndjson((await h.inject('GET', `/api/attempts/${a.id}/logs?level=error`)).body);
    expect(errorsOnly).toEqual([]);

    const diff = (await h.inject('GET', `/api/attempts/${a.id}/diff?format=json`)).json().data;
    const byPath = Object.fromEntries(diff.files.map((f: { path: string }) => [f.path, f]));
    expect(byPath['src/added.txt']).toMatchObject({ status: 'added', additions: 3, deletions: 0 });
    expect(byPath['src/added.txt'].changes[0]).toEqual({ type: 'add', lineNumber: 1, content: 'one' });
    expect(byPath['README.md']).toMatchObject({ status: 'modified', additions: 1, deletions: 0 });
    expect(diff.summary).toEqual({ filesChanged: 2, additions: 4, deletions: 0 });
    // without format the answer is the spec's Diff resource (files[] + summary), the same as format=json
    const byDefault = await h.inject('GET', `/api/attempts/${a.id}/diff`);
    expect(byDefault.statusCode).toBe(200);
    expect(byDefault.json().data).toEqual(diff);
    expect(byDefault.json().data).not.toHaveProperty('diff');
    const unified = (await h.inject('GET', `/api/attempts/${a.id}/diff?format=unified`)).json().data;
    expect(unified).toMatchObject({ format: 'unified', summary: diff.summary });
    expect(unified.diff).toContain('+added by the agent');
    const split = (await h.inject('GET', `/api/attempts/${a.id}/diff?format=split&file=README.md`)).json().data;
    expect(split.files).toHaveLength(1);
    expect(split.files[0].rows.at(-1)).toMatchObject({ left: null, right: { content: 'added by the agent', type: 'add' } });

    const branches = (await h.inject('GET', `/api/projects/${p.id}/branches`)).json().data;
    expect(branches.currentBranch).toBe('main');
    expect(branches.managedBranches).toEqual([{ name: a.branch, taskId, attemptId: a.id }]);
    expect(branches.branches.find((b: { name: string }) => b.name === a.branch)).toMatchObject({ isManagedWorktree: true, taskId, attemptId: a.id, isDefault: false });
    expect(branches.branches.find((b: { name: string }) => b.name === 'main')).toMatchObject({ isManagedWorktree: false, isDefault: true, isCurrent: true });

    const container = (await h.inject('GET', `/api/containers/${a.id}`)).json().data;
    expect(container).toMatchObject({ id: a.id, taskAttemptId: a.id, status: 'inactive', branch: a.branch, baseBranch: 'main', gitStatus: { ahead: 1, behind: 0 } });
    expect(container.diskUsage.used).toBeGreaterThan(0);

    const branchHead = gitOut(p.repo, 'rev-parse', a.branch);
    const merged = await h.inject('POST', `/api/attempts/${a.id}/merge`, {});
    expect(merged.statusCode).toBe(200);
    expect(merged.json().data).toMatchObject({ attemptId: a.id, merged: true, cleanup: false, commitSha: branchHead });
    expect(gitOut(p.repo, 'rev-parse', 'main')).toBe(branchHead); // fast-forward
    expect(fs.readFileSync(`${p.repo}/src/added.txt`, 'utf8')).toBe('one\ntwo\nthree\n'); // the checked-out base moved with its work tree
    expect(gitOut(p.repo, 'status', '--porcelain')).toBe('');
    expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('completed');
    expect((await h.attempt(a.id)).mergedAt).not.toBeNull();
    expect((await h.inject('POST', `/api/attempts/${a.id}/merge`, {})).statusCode).toBe(409);
  });

  test('the start endpoints say where their time went: Server-Timing db, temporal, total', async () => {
    const timing = (header: unknown) =>
      Object.fromEntries(String(header).split(', ').map((part) => {
        const [name, dur] = part.split(';dur=');
        return [name, Number(dur)];
      }));
    const p = await h.project();
    const taskId = await h.task(p.id, 'Timed start', 'please edit');
    const r = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' });
    expect(r.statusCode).toBe(200);
    const t = timing(r.headers['server-timing']);
    expect(Object.keys(t)).toEqual(['db', 'temporal', 'total']);
    expect(t.db).toBeGreaterThan(0);
    expect(t.temporal).toBeGreaterThan(0);
    expect(t.total).toBeGreaterThanOrEqual(t.db + t.temporal - 0.02);

    const created = (await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted' })).json().data;
    const r2 = await h.inject('POST', `/api/attempts/${created.id}/start`);
    expect(r2.statusCode).toBe(200);
    const t2 = timing(r2.headers['server-timing']);
    expect(Object.keys(t2)).toEqual(['db', 'temporal', 'total']);
    expect(t2.temporal).toBeGreaterThan(0);

    // the OpenAPI document declares the header, and what was sent matches its pattern
    const doc = (await h.inject('GET', '/api/openapi.json')).json();
    for (const [route, res] of [['/api/tasks/{id}/start', r], ['/api/attempts/{id}/start', r2]] as const) {
      const declared = doc.paths[route].post.responses['200'].headers['Server-Timing'];
      expect(declared.schema.type).toBe('string');
      expect(String(res.headers['server-timing'])).toMatch(new RegExp(declared.schema.pattern));
    }
    for (const id of [r.json().data.attemptId, created.id]) expect((await h.until(id, ['completed', 'failed'])).status).toBe('completed');
  });

  test('an attempt started while its project is still cloning waits for the clone and starts when it is done, on the first try', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Wait for the clone');
    // the project's repository as it is while its clone runs (cloneProjectWorkflow sets it back)
    const { rows } = await h.stack.db.query<{ git_repo_path: string }>(`SELECT git_repo_path FROM projects WHERE id = $1`, [p.id]);
    await h.stack.db.query(`UPDATE projects SET clone_status = 'cloning', git_repo_path = NULL WHERE id = $1`, [p.id]);
    const started = await h.start(taskId);
    // it waits, saying so in its log, for longer than the old retries' first three intervals (1 + 2 s)
    await eventually(async () => {
      const logs = ndjson((await h.inject('GET', `/api/attempts/${started.attemptId}/logs`)).body);
      return logs.some((l) => l.message === "waiting for the project's repository to finish cloning") || undefined;
    });
    await new Promise((r) => setTimeout(r, 3500));
    expect((await h.attempt(started.attemptId)).status).toBe('running');
    await h.stack.db.query(`UPDATE projects SET clone_status = 'ready', git_repo_path = $2 WHERE id = $1`, [p.id, rows[0]?.git_repo_path]);
    expect((await h.until(started.attemptId, ['completed', 'failed'])).status).toBe('completed');
    // one try of prepareWorktree: the wait happened inside it, not in Temporal's retry backoff
    expect(await prepareTries(started.attemptId)).toEqual([1]);
  });

  test('a repository with no commit, a detached HEAD without the branch, or a repository gone: the attempt fails on the first try, saying what to do', async () => {
    const failed = async (repo: string, change: () => void) => {
      const r = await h.inject('POST', '/api/projects', { name: `p-${Math.random().toString(36).slice(2)}`, repository: { url: repo } });
      expect(r.statusCode).toBe(201);
      change();
      const started = await h.start(await h.task(r.json().data.id, 'On an unusable repository'));
      const a = await h.until(started.attemptId, ['completed', 'failed']);
      expect(a.status).toBe('failed');
      expect(await prepareTries(started.attemptId)).toEqual([1]); // not five tries of the same git error
      return a.error as string;
    };
    // a fresh `git init`: its branch has no commit to fork from
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-empty-'));
    gitOk(empty, 'init', '-q', '-b', 'main');
    expect(await failed(empty, () => undefined)).toBe(
      `${empty} has no commit yet (its branch "main" is empty), and an attempt's branch forks from one: make a first commit (for example git -C ${empty} commit --allow-empty -m "initial commit"), then start a new attempt`,
    );
    // the configured branch deleted while HEAD is detached
    const detached = (await h.project()).repo;
    expect(await failed(detached, () => gitOk(detached, 'checkout', '-q', '--detach') && gitOk(detached, 'branch', '-q', '-D', 'main'))).toMatch(
      new RegExp(`^branch "main" does not exist in ${detached} and its HEAD is detached, so there is no branch to start from: create the branch`),
    );
    // the checkout removed, or its .git
    const gone = (await h.project()).repo;
    expect(await failed(gone, () => fs.rmSync(gone, { recursive: true, force: true }))).toMatch(new RegExp(`^the project's repository ${gone} does not exist on this worker's host: restore it there`));
    const notGit = (await h.project()).repo;
    expect(await failed(notGit, () => fs.rmSync(path.join(notGit, '.git'), { recursive: true, force: true }))).toMatch(
      new RegExp(`^the project's repository ${notGit} is no longer a git repository: restore its .git`),
    );
    for (const d of [empty, detached, notGit]) fs.rmSync(d, { recursive: true, force: true });
  });

  test('no-ff merge with cleanup removes worktree and branch', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Edit for no-ff');
    const { attemptId } = await h.start(taskId);
    const a = await h.until(attemptId, ['completed', 'failed']);
    expect(a.status).toBe('completed');
    expect(fs.existsSync(a.worktreePath)).toBe(true);
    const before = gitOut(p.repo, 'rev-parse', 'main');
    const branchHead = gitOut(p.repo, 'rev-parse', a.branch);
    const r = await h.inject('POST', `/api/task-attempts/${attemptId}/merge`, { strategy: 'no-ff', cleanup: true, message: 'Merge the agent work' });
    expect(r.statusCode).toBe(200);
    expect(r.json().data).toMatchObject({ merged: true, cleanup: true });
    const head = gitOut(p.repo, 'rev-parse', 'main');
    expect(head).toBe(r.json().data.commitSha);
    expect(gitOut(p.repo, 'log', '-1', '--format=%P', 'main').split(' ')).toEqual([before, branchHead]);
    expect(gitOut(p.repo, 'log', '-1', '--format=%s', 'main')).toBe('Merge the agent work');
    expect(fs.existsSync(a.worktreePath)).toBe(false);
    expect(gitOk(p.repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${a.branch}`)).toBe(false);
    expect(gitOut(p.repo, 'worktree', 'list')).not.toContain(attemptId);
    // the container no longer reports the removed worktree
    const container = (await h.inject('GET', `/api/containers/${attemptId}`)).json().data;
    expect(container).toMatchObject({ id: attemptId, taskAttemptId: attemptId, status: 'deleted', worktreePath: null, branch: a.branch, baseBranch: 'main' });
    // the closed attempt workflow has finished
    const client = await h.stack.temporal.client();
    await expect(client.workflow.getHandle(`attempt:${attemptId}`).result()).resolves.toBe('completed');
    await recordHistory(h.stack, `attempt:${attemptId}`, 'attempt-merged-cleanup');
    await recordHistory(h.stack, `merge:${attemptId}`, 'merge-no-ff-cleanup');
  });

  test('squash merge lands one commit with the changes on the base branch', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Edit for squash');
    const { attemptId } = await h.start(taskId);
    const a = await h.until(attemptId, ['completed', 'failed']);
    const before = gitOut(p.repo, 'rev-parse', 'main');
    const r = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
    expect(r.statusCode).toBe(200);
    expect(gitOut(p.repo, 'log', '-1', '--format=%P', 'main')).toBe(before);
    expect(gitOut(p.repo, 'log', '-1', '--format=%s', 'main')).toBe('Edit for squash');
    expect(gitOut(p.repo, 'show', 'main:src/added.txt')).toBe('one\ntwo\nthree');
    expect(gitOk(p.repo, 'merge-base', '--is-ancestor', a.branch, 'main')).toBe(false);
  });
});
