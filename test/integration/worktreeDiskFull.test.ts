/**
 * The disk under the worktrees fills up ($ARMADA_HOME and the project's repository on one real small disk, a tmpfs
 * mounted for the test): while an attempt's worktree is made, and while the agent's changes are committed.
 *
 * Checked: a try on the full disk fails saying that the disk is full and where (git's own words do not: `cannot update
 * ref …: couldn't write '….lock'`, `unable to write file README.md`), and leaves nothing behind (no worktree, no
 * registration in the repository); space freed between the tries lets the next try make the whole worktree and the
 * attempt completes with every file of its base; a disk that stays full fails the attempt with that message. A commit
 * on a full disk fails the attempt (never `completed` with nothing committed), saying so and that a follow-up commits
 * the changes, which stay in the worktree; once space is back, a follow-up's run commits them with its own. A merge on
 * the full disk answers 503 saying so and to merge again, the base untouched (it was a 500 after three tries), and
 * lands once space is back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { agentConfig, api, gitOut } from '../support/attemptHelpers';
import { eventually, makeGitRepo, startTestStack, type TestStack } from '../support/harness';
import { mountSmallDisk, type SmallDisk } from '../support/smallDisk';

/** The first run writes its work, then fills the disk (as an agent's package install would); a follow-up notes its prompt. */
const FILLER_AGENT =
  'case "$ARMADA_PROMPT" in *FILL*) echo "the agent\'s work" > work.txt; cat /dev/zero > "$FILLER" 2>/dev/null; echo "disk filled";; ' +
  '*) echo "$ARMADA_PROMPT" >> notes.txt; echo "follow-up noted";; esac';
/** An agent whose change holds a file larger than the room a nearly full disk has left (a build output, a data file). */
const BIG_AGENT = 'echo "edited by the agent" >> README.md; head -c 700000 /dev/urandom | base64 > big.txt';
const BASE_FILES = Object.fromEntries(Array.from({ length: 12 }, (_v, i) => [`src/file${i}.txt`, `${'x'.repeat(2000)} ${i}\n`]));

let disk: SmallDisk;
let stack: TestStack;
let h: ReturnType<typeof api>;
let repo: string;
let projectId: string;
const worktreesDir = () => path.join(stack.config.home, 'worktrees');
/** The worktrees registered in the repository besides its own checkout. */
const registered = () => gitOut(repo, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ') && l !== `worktree ${repo}`);

beforeAll(async () => {
  disk = mountSmallDisk('6m');
  repo = path.join(disk.dir, 'repo');
  fs.cpSync(makeGitRepo({ 'README.md': 'line 1\n', ...BASE_FILES }), repo, { recursive: true });
  const home = path.join(disk.dir, 'home');
  fs.mkdirSync(home);
  const base = agentConfig();
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    env: { ARMADA_HOME: home },
    file: { ...base, agents: { ...base.agents, filler: { command: ['bash', '-c', FILLER_AGENT], format: 'text', env: { FILLER: path.join(disk.dir, 'filler') } }, big: { command: ['bash', '-c', BIG_AGENT], format: 'text' } } },
  });
  h = api(stack);
  const r = await h.inject('POST', '/api/projects', { name: 'on a small disk', repository: { url: repo } });
  if (r.statusCode !== 201) throw new Error(`project: ${r.body}`);
  projectId = r.json().data.id;
}, 60_000);

afterAll(async () => {
  disk?.free();
  await stack?.close();
  disk?.remove();
});

/** The failure of the attempt's pending prepareWorktree once it has been tried at least `tries` times. */
async function prepareFailure(attemptId: string, tries: number): Promise<string> {
  const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
  return eventually(async () => {
    const pending = (await handle.describe()).raw.pendingActivities?.find((p) => p.activityType?.name === 'prepareWorktree');
    return pending && (pending.attempt ?? 0) > tries - 1 && pending.lastFailure?.message ? pending.lastFailure.message : undefined;
  }, 20_000);
}

test('a worktree made on a full disk: each try fails saying so and leaves nothing; space freed, the next try makes it whole and the attempt completes', async () => {
  disk.fill();
  const { attemptId } = await h.start(await h.task(projectId, 'through a full disk'));
  const failure = await prepareFailure(attemptId, 2);
  expect(failure).toMatch(new RegExp(`the disk holding ${worktreesDir()} is full \\(\\d+ bytes free\\): free space on it, then start a new attempt \\(`));
  disk.free();

  const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
  expect(a).toMatchObject({ status: 'completed', error: null });
  // the whole base is there, and the commit holds the agent's edit alone
  const tree = gitOut(repo, 'ls-tree', '-r', '--name-only', a.branch).split('\n').sort();
  expect(tree).toEqual(['README.md', 'src/added.txt', ...Object.keys(BASE_FILES)].sort());
  expect(gitOut(repo, 'diff', '--name-status', 'main', a.branch)).toBe('M\tREADME.md\nA\tsrc/added.txt');
  expect(gitOut(a.worktreePath, 'status', '--porcelain')).toBe('');
}, 90_000);

test("an agent fills the disk: its commit fails the attempt saying so, the changes kept, and an attempt started meanwhile fails naming the disk, leaving nothing; once space is back a follow-up's run commits the kept changes", async () => {
  const { attemptId } = await h.start(await h.task(projectId, 'FILL the disk while working'), 'filler');
  // the agent has filled the disk: a start now meets it full for all its tries, while the commit tries its five
  await eventually(async () => fs.statfsSync(disk.dir).bavail === 0 && fs.existsSync(path.join(disk.dir, 'filler')), 30_000, 50);
  const onFull = (await h.start(await h.task(projectId, 'on a disk that stays full'))).attemptId;
  const [failed, notMade] = await Promise.all([h.until(attemptId, ['completed', 'failed'], 60_000), h.until(onFull, ['completed', 'failed'], 60_000)]);
  expect(failed.status).toBe('failed');
  expect(failed.error).toMatch(
    /^committing the agent's changes failed: the disk holding .* is full \(\d+ bytes free\): free space on it, then send a follow-up: its run commits them too \(they stay in the worktree\) \(/,
  );
  // nothing was committed, and the work is where it was
  expect(gitOut(repo, 'rev-parse', failed.branch)).toBe(gitOut(repo, 'rev-parse', 'main'));
  expect(fs.readFileSync(path.join(failed.worktreePath, 'work.txt'), 'utf8')).toBe("the agent's work\n");
  expect(fs.existsSync(path.join(repo, '.git', 'worktrees', attemptId, 'index.lock'))).toBe(false);
  // the attempt started on the full disk: failed with the disk named, no worktree or registration of it left
  expect(notMade.status).toBe('failed');
  expect(notMade.error).toMatch(new RegExp(`the disk holding ${worktreesDir()} is full \\(\\d+ bytes free\\): free space on it, then start a new attempt`));
  expect(fs.existsSync(path.join(worktreesDir(), onFull))).toBe(false);
  expect(registered().filter((l) => l.includes(onFull))).toEqual([]);
  expect(fs.readdirSync(path.join(repo, '.git', 'worktrees')).sort()).toEqual(registered().map((l) => path.basename(l)).sort());

  disk.free();
  const f = await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'space is back' });
  expect(f.statusCode).toBe(202);
  const done = await eventually(async () => {
    const a = await h.attempt(attemptId);
    return a.status === 'completed' ? a : undefined;
  }, 60_000);
  expect(done.error).toBeNull();
  expect(gitOut(repo, 'diff', '--name-status', 'main', done.branch)).toBe('A\tnotes.txt\nA\twork.txt');
  expect(gitOut(repo, 'show', `${done.branch}:work.txt`)).toBe("the agent's work");
  expect(gitOut(done.worktreePath, 'status', '--porcelain')).toBe('');
}, 120_000);

test('a merge on a full disk: 503 saying so and to merge again, the base and its checkout untouched; once space is back the same merge lands', async () => {
  const { attemptId } = await h.start(await h.task(projectId, 'to merge on a full disk'));
  await h.until(attemptId, ['completed'], 60_000);
  const base = gitOut(repo, 'rev-parse', 'main');
  disk.fill();
  const refused = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
  disk.free();
  expect(refused.statusCode).toBe(503);
  expect(refused.json().error).toMatchObject({
    code: 'SERVICE_UNAVAILABLE',
    message: expect.stringMatching(new RegExp(`^Nothing was merged: the disk holding ${repo} is full \\(\\d+ bytes free\\): free space on it, then merge again \\(`)),
  });
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(base);
  expect(gitOut(repo, 'status', '--porcelain')).toBe('');
  expect((await h.attempt(attemptId)).merged).toBe(false);

  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
  expect(merged.statusCode).toBe(200);
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(merged.json().data.commitSha);
  expect(gitOut(repo, 'diff', '--name-status', base, 'main')).toBe('M\tREADME.md\nA\tsrc/added.txt');
}, 120_000);

test("a merge whose checkout of the base runs out of room half-way: 503, and the base's checkout is as it was (no half-merged files); once space is back it lands", async () => {
  const { attemptId } = await h.start(await h.task(projectId, 'a big file to merge'), 'big');
  await h.until(attemptId, ['completed'], 60_000);
  const base = gitOut(repo, 'rev-parse', 'main');
  const readme = fs.readFileSync(path.join(repo, 'README.md'), 'utf8');
  // room for git's objects and refs, not for the checkout's big file
  disk.fill(256 * 1024);
  const refused = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
  disk.free();
  expect(refused.statusCode).toBe(503);
  expect(refused.json().error.message).toMatch(/^Nothing was merged: .*: free space on it, then merge again \(/);
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(base);
  expect(gitOut(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
  expect(fs.readFileSync(path.join(repo, 'README.md'), 'utf8')).toBe(readme);

  const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
  expect(merged.statusCode).toBe(200);
  expect(gitOut(repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
  expect(gitOut(repo, 'diff', '--name-status', base, 'main')).toBe('M\tREADME.md\nA\tbig.txt');
}, 120_000);
