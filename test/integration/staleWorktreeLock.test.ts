/**
 * A git of the attempt's worktree killed with -9 (an OOM kill) while it held the worktree's index.lock: before, every
 * later commit of the attempt failed on the lock ("Unable to create '…/index.lock': File exists") until someone
 * removed it by hand. The worktree is Armada's alone, so the follow-up's commit removes the lock once nobody can hold
 * it, says so in the follow-up's log, and commits; the project repository's own lock is still refused (the merge).
 */
import fs from 'node:fs';
import path from 'node:path';
import { attemptStackForFile, gitOut } from '../support/attemptHelpers';
import { eventually } from '../support/harness';
import { indexLockOfKilledGit } from '../support/killedGitLock';

const h = attemptStackForFile();

test('the index.lock of a git killed -9 in the worktree: the next follow-up removes it, says so, and commits', async () => {
  const { repo, attemptId, branch, worktree } = await h.finishedAttempt('Follow up past a killed git');
  const first = gitOut(repo, 'rev-parse', branch);
  const lock = await indexLockOfKilledGit(worktree, 'README.md');
  // left a while ago (the follow-up came later than the kill): a fresh one is waited for by git's refusal as before
  const old = new Date(Date.now() - 60_000);
  fs.utimesSync(lock, old, old);
  // it is in the way: git itself refuses to write the index
  expect(() => gitOut(worktree, 'add', '-A')).toThrow(/index\.lock': File exists/);

  expect((await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'FOLLOWUP after the kill' })).statusCode).toBe(202);
  const followUp = await eventually(async () => {
    const rows = (await h.inject('GET', `/api/processes?attemptId=${attemptId}`)).json().data as { id: string; status: string }[];
    return rows.length === 2 && rows.every((r) => r.status !== 'running') ? rows : undefined;
  }, 60_000);
  const a = await h.until(attemptId, ['completed', 'failed'], 30_000);
  expect({ status: a.status, error: a.error }).toEqual({ status: 'completed', error: null });
  expect(fs.existsSync(lock)).toBe(false);
  // one commit on top of the first, holding the follow-up's note and the killed git's edit
  expect(gitOut(repo, 'rev-parse', `${branch}~1`)).toBe(first);
  expect(gitOut(repo, 'show', `${branch}:notes.txt`)).toContain('FOLLOWUP after the kill');
  expect(gitOut(repo, 'show', `${branch}:README.md`)).toContain('edited before the kill');
  expect(gitOut(worktree, 'status', '--porcelain')).toBe('');
  // the follow-up's log says what was removed and why
  const lines = (await Promise.all(followUp.map((p) => h.logs(p.id)))).flat();
  const said = lines.filter((l) => l.message.includes('stale git lock'));
  expect(said).toHaveLength(1);
  expect(said[0]?.level).toBe('warn');
  expect(said[0]?.message).toContain(`removed the stale git lock file ${lock}: it was `);
  expect(said[0]?.message).toMatch(/s old and no process works in the worktree or has it open/);

  // the project repository's lock is the user's: the merge is still refused, the lock kept
  const repoLock = path.join(repo, '.git', 'index.lock');
  fs.writeFileSync(repoLock, '');
  fs.utimesSync(repoLock, old, old);
  const merge = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'ff' });
  expect(merge.statusCode).toBe(409);
  expect(merge.json().error).toMatchObject({ code: 'REPOSITORY_LOCKED', details: { lockFile: repoLock } });
  expect(fs.existsSync(repoLock)).toBe(true);
  fs.rmSync(repoLock);
}, 90_000);
