/**
 * A lock file left in the project repository (a git process that crashed, or one still running) makes a merge a 409
 * REPOSITORY_LOCKED naming the lock file, at once and without touching the base; once the lock is removed the same
 * merge lands. Before, it was a 500 INTERNAL_ERROR after 27 s of retries that could not help.
 */
import fs from 'node:fs';
import path from 'node:path';
import { attemptStackForFile, gitOk, gitOut } from '../support/attemptHelpers';

const h = attemptStackForFile();

const markers = (repo: string, attemptId: string) => gitOut(repo, 'for-each-ref', '--format=%(refname)', `refs/armada/merges/${attemptId}/`);

async function timedMerge(attemptId: string, body: Record<string, unknown>) {
  const t0 = Date.now();
  const r = await h.inject('POST', `/api/attempts/${attemptId}/merge`, body);
  return { r, ms: Date.now() - t0 };
}

test('a stale .git/index.lock: 409 REPOSITORY_LOCKED naming it, fast, base untouched; without it the merge lands', async () => {
  const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Merge past a stale index.lock');
  const before = gitOut(repo, 'rev-parse', 'main');
  const head = gitOut(repo, 'rev-parse', branch);
  const lock = path.join(repo, '.git', 'index.lock');
  fs.writeFileSync(lock, '');

  const { r: refused, ms } = await timedMerge(attemptId, { strategy: 'ff', cleanup: true });
  expect({ status: refused.statusCode, body: refused.json() }).toMatchObject({
    status: 409,
    body: { success: false, error: { code: 'REPOSITORY_LOCKED', details: { lockFile: lock, repository: repo } } },
  });
  expect(refused.json().error.message).toContain(`remove ${lock}`);
  expect(ms).toBeLessThan(15_000);
  // nothing moved, nothing removed, no marker of a merge that did not happen
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(before);
  expect(gitOk(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`)).toBe(true);
  expect(fs.existsSync(worktree)).toBe(true);
  expect(markers(repo, attemptId)).toBe('');
  expect((await h.attempt(attemptId)).merged).toBe(false);
  expect(fs.existsSync(lock)).toBe(true); // the lock is the user's to remove: Armada cannot know that no git runs

  fs.rmSync(lock);
  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'ff', cleanup: true });
  expect(merged.statusCode).toBe(200);
  expect(merged.json().data).toMatchObject({ merged: true, commitSha: head, cleanup: true });
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(head);
  expect(gitOut(repo, 'status', '--porcelain')).toBe(''); // the checked-out base moved with its work tree
  expect(fs.readFileSync(path.join(repo, 'src', 'added.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
  expect(gitOk(repo, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`)).toBe(false);
  expect(fs.existsSync(worktree)).toBe(false);
  expect(markers(repo, attemptId)).toBe('');
}, 120_000);

test("a stale lock of the base branch's ref: a no-ff merge is a 409 naming it; once removed, one merge commit lands", async () => {
  const { repo, attemptId, branch } = await h.finishedAttempt('Merge past a stale ref lock');
  const before = gitOut(repo, 'rev-parse', 'main');
  const head = gitOut(repo, 'rev-parse', branch);
  const lock = path.join(repo, '.git', 'refs', 'heads', 'main.lock');
  fs.writeFileSync(lock, '');

  const { r: refused, ms } = await timedMerge(attemptId, { strategy: 'no-ff' });
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error).toMatchObject({ code: 'REPOSITORY_LOCKED', details: { lockFile: lock, repository: repo } });
  expect(ms).toBeLessThan(15_000);
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(before);
  expect(markers(repo, attemptId)).toBe('');

  fs.rmSync(lock);
  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'no-ff' });
  expect(merged.statusCode).toBe(200);
  const commitSha = merged.json().data.commitSha as string;
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(commitSha);
  expect(gitOut(repo, 'rev-list', '--parents', '-n', '1', commitSha)).toBe(`${commitSha} ${before} ${head}`);
  // the marker names the commit that landed, not one computed by the refused try
  expect(gitOut(repo, 'rev-parse', `refs/armada/merges/${attemptId}/${head}`)).toBe(commitSha);
}, 120_000);

test('a base checked out nowhere, its ref locked: a squash merge is a 409 naming the lock; then it lands', async () => {
  const { repo, attemptId } = await h.finishedAttempt('Squash past a stale ref lock');
  gitOut(repo, 'checkout', '-q', '-b', 'elsewhere');
  const before = gitOut(repo, 'rev-parse', 'main');
  const lock = path.join(repo, '.git', 'refs', 'heads', 'main.lock');
  fs.writeFileSync(lock, '');

  const { r: refused, ms } = await timedMerge(attemptId, { strategy: 'squash' });
  expect(refused.statusCode).toBe(409);
  expect(refused.json().error).toMatchObject({ code: 'REPOSITORY_LOCKED', details: { lockFile: lock, repository: repo } });
  expect(ms).toBeLessThan(15_000);
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(before);

  fs.rmSync(lock);
  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
  expect(merged.statusCode).toBe(200);
  const commitSha = merged.json().data.commitSha as string;
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(commitSha);
  expect(gitOut(repo, 'rev-list', '--parents', '-n', '1', commitSha)).toBe(`${commitSha} ${before}`);
  expect(gitOut(repo, 'show', `${commitSha}:src/added.txt`)).toBe('one\ntwo\nthree');
}, 120_000);
