/**
 * Branch names in requests follow git's rules (`git check-ref-format --branch`): a project's `repository.branch` and
 * create-pr's `baseBranch`. Before, `POST /api/projects` took `../../x`, `--orphan=x` or `--output=/tmp/…` (201), and
 * an attempt then silently forked from the repository's current branch.
 */
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let repo: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  repo = makeGitRepo();
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) => stack.app('task').inject({ method, url, payload: payload as object });

const REFUSED = ['../../x', '--orphan=x', '--output=/tmp/owned', '-b', 'HEAD', 'a..b', 'a/.hidden', 'x.lock', 'a//b', '/a', 'a/', 'a.', 'a@{1}', 'a b', 'a~1', 'a:b'];

test('a project branch git would refuse is a 400 naming repository.branch; names git takes are kept as sent', async () => {
  for (const [i, branch] of REFUSED.entries()) {
    const r = await inject('POST', '/api/projects', { name: `refused-${i}`, repository: { url: repo, branch } });
    expect([branch, r.statusCode]).toEqual([branch, 400]);
    expect(r.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR', details: { 'repository.branch': expect.any(String) } } });
  }
  expect((await inject('GET', '/api/projects')).json().pagination.total).toBe(0);
  for (const [i, branch] of ['feature/x', 'release-1.2', 'a./b', 'HEADS', 'fix/@home', 'é'].entries()) {
    const r = await inject('POST', '/api/projects', { name: `kept-${i}`, repository: { url: repo, branch } });
    expect([branch, r.statusCode]).toEqual([branch, 201]);
    expect(r.json().data.repository.branch).toBe(branch);
  }
});

test("create-pr's baseBranch follows the same rule (in the code-hosting routes' error shape)", async () => {
  const bad = await inject('POST', '/api/task-attempts/00000000-0000-4000-8000-000000000000/create-pr', { baseBranch: '--orphan=x' });
  expect(bad.statusCode).toBe(400);
  expect(bad.json()).toMatchObject({ success: false, error: 'validation_error' });
  // a name git takes gets as far as looking the attempt up
  const good = await inject('POST', '/api/task-attempts/00000000-0000-4000-8000-000000000000/create-pr', { baseBranch: 'release/1.2' });
  expect(good.statusCode).toBe(404);
});
