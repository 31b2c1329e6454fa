/**
 * A repository URL may carry credentials (`https://user:secret@host/…`): it is accepted and cloned with them, but the
 * secret never comes back. Before, the password was in every project detail and list response, in task details, and
 * `GET /api/filesystem/git-repos` showed a repository's remote verbatim. A password Armada cannot take out of the URL
 * (ssh://, git://, an http(s) userinfo it cannot delimit) is refused: it went to git's command line as given.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { REPO_URL_RULE } from '../../lib/git';
import { createLogger } from '../../lib/logger';
import { managedClonesDir } from '../../lib/projects/managedClones';
import { openSecret } from '../../lib/secretBox';
import { holdsUrlSecret, redactUrlCredentials, splitUrlCredentials } from '../../lib/urlCredentials';
import { eventually, makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
const logged: string[] = [];
let tree: string;

beforeAll(async () => {
  tree = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-creds-')));
  const sink = new Writable({
    write(chunk, _enc, done) {
      logged.push(String(chunk));
      done();
    },
  });
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    logger: createLogger('debug', 'armada', sink),
    file: {
      filesystem: { allowedPaths: [tree] },
      // the clone that cannot succeed is failed after its five tries 0.2, 0.4, 0.8 and 1.6 s apart (default 2-16 s)
      projects: { cloneRetryInitialIntervalMs: 200 },
    },
  });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  fs.rmSync(tree, { recursive: true, force: true });
});

const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) => stack.app('task').inject({ method, url, payload: payload as object });

test('the rule: a password becomes ***, an https user alone (often a token) becomes ***, ssh users stay', () => {
  expect(redactUrlCredentials('http://user:s3cretpw@127.0.0.1:1/x.git')).toBe('http://user:***@127.0.0.1:1/x.git');
  expect(redactUrlCredentials('https://ghp_abc123@github.com/a/b.git')).toBe('https://***@github.com/a/b.git');
  expect(redactUrlCredentials('https://user:p@ss@host/x')).toBe('https://user:***@host/x');
  expect(redactUrlCredentials('ssh://git@host/a/b.git')).toBe('ssh://git@host/a/b.git');
  expect(redactUrlCredentials('ssh://git:pw@host/a/b.git')).toBe('ssh://git:***@host/a/b.git');
  expect(redactUrlCredentials('git@github.com:a/b.git')).toBe('git@github.com:a/b.git');
  expect(redactUrlCredentials('https://github.com/a/b.git?x=a@b')).toBe('https://github.com/a/b.git?x=a@b');
  expect(redactUrlCredentials("fatal: unable to access 'https://u:pw@h/x/': nope, and https://t0ken@h/y")).toBe("fatal: unable to access 'https://u:***@h/x/': nope, and https://***@h/y");
  expect(redactUrlCredentials('/srv/repos/a@b')).toBe('/srv/repos/a@b');
});

test('split: an http(s) URL without its userinfo and the credentials it carried, decoded as git decodes them', () => {
  expect(splitUrlCredentials('http://user:s3cretpw@127.0.0.1:1/x.git')).toEqual({ url: 'http://127.0.0.1:1/x.git', credentials: { username: 'user', password: 's3cretpw' } });
  expect(splitUrlCredentials('https://ghp_abc123@github.com/a/b.git')).toEqual({ url: 'https://github.com/a/b.git', credentials: { username: 'ghp_abc123', password: '' } });
  expect(splitUrlCredentials('https://user:p@ss@host/x')).toEqual({ url: 'https://host/x', credentials: { username: 'user', password: 'p@ss' } });
  expect(splitUrlCredentials('https://us%40er:p%3Ass%2F@host/x')).toEqual({ url: 'https://host/x', credentials: { username: 'us@er', password: 'p:ss/' } });
  expect(splitUrlCredentials('ssh://git@host/a/b.git')).toEqual({ url: 'ssh://git@host/a/b.git', credentials: null });
  expect(splitUrlCredentials('/srv/repos/a@b')).toEqual({ url: '/srv/repos/a@b', credentials: null });
  // a URL as shown holds no secret; one as given does
  expect(holdsUrlSecret('http://user:***@127.0.0.1:1/x.git')).toBe(false);
  expect(holdsUrlSecret('https://***@github.com/a/b.git')).toBe(false);
  expect(holdsUrlSecret('https://github.com/a/b.git')).toBe(false);
  expect(holdsUrlSecret('http://user:s3cretpw@127.0.0.1:1/x.git')).toBe(true);
  expect(holdsUrlSecret('https://ghp_abc123@github.com/a/b.git')).toBe(true);
});

test('a project made from a URL with credentials: accepted, never shown (detail, list, task detail, clone error, logs)', async () => {
  const url = 'http://user:s3cretpw@127.0.0.1:1/x.git';
  const created = await inject('POST', '/api/projects', { name: 'with-credentials', repository: { url } });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id;
  const shown = 'http://user:***@127.0.0.1:1/x.git';
  expect(created.json().data.repository.url).toBe(shown);
  // the clone is tried with the credentials (it fails here: nothing listens on port 1; five tries, ~3 s of backoff here)
  const failed = await eventually(async () => {
    const p = (await inject('GET', `/api/projects/${id}`)).json().data;
    return p.repository.status === 'failed' ? p : undefined;
  }, 150_000, 500);
  expect(failed.repository.url).toBe(shown);
  const task = await inject('POST', '/api/tasks', { projectId: id, title: 'in a credentialed project' });
  const bodies = [
    created.body,
    (await inject('GET', `/api/projects/${id}`)).body,
    (await inject('GET', '/api/projects')).body,
    (await inject('GET', `/api/tasks/${task.json().data.id}`)).body,
  ];
  for (const body of bodies) expect(body).not.toContain('s3cretpw');
  expect(JSON.parse(bodies[3] as string).data.metadata.repository).toBe(shown);
  expect(logged.join('')).not.toContain('s3cretpw');
  // stored as shown, the credentials sealed apart (test/integration/repoCredentials.test.ts clones and pushes with them)
  const row = (await stack.db.query('SELECT * FROM projects WHERE id = $1', [id])).rows[0];
  expect(JSON.stringify(row)).not.toContain('s3cretpw');
  expect(row.repo_url).toBe(shown);
  expect(JSON.parse(openSecret(stack.keys.encryption, row.repo_credentials_sealed))).toEqual({ username: 'user', password: 's3cretpw' });
}, 180_000);

test('a password Armada cannot take out of the URL is refused: ssh:// and git:// URLs, an http(s) userinfo with # or ?', async () => {
  const projects = async () => (await stack.db.query('SELECT count(*)::int AS n FROM projects')).rows[0].n as number;
  const clones = () => (fs.existsSync(managedClonesDir(stack.config.home)) ? fs.readdirSync(managedClonesDir(stack.config.home)).length : 0);
  const [rowsBefore, clonesBefore] = [await projects(), clones()];
  const urls = ['ssh://git:s3cretpw2@127.0.0.1:1/x.git', 'git://user:s3cretpw2@127.0.0.1:1/x.git', 'https://user:s3cretpw2#x@127.0.0.1:1/x.git', 'https://user:s3cretpw2?x@127.0.0.1:1/x.git'];
  for (const [i, url] of urls.entries()) {
    const r = await inject('POST', '/api/projects', { name: `refused-url-${i}`, repository: { url } });
    expect([url, r.statusCode]).toEqual([url, 400]);
    expect(r.json()).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR', message: `Request body is invalid: repository.url ${REPO_URL_RULE}`, details: { 'repository.url': REPO_URL_RULE } },
    });
    expect(r.body).not.toContain('s3cretpw2');
  }
  expect(REPO_URL_RULE).toContain('use an SSH key (ssh://git@host/owner/repo.git) or a credential helper');
  expect(await projects()).toBe(rowsBefore);
  expect(clones()).toBe(clonesBefore);
  expect(logged.join('')).not.toContain('s3cretpw2');
});

test('git-repos shows a remote without its secret', async () => {
  const repo = makeGitRepo();
  const here = path.join(tree, 'repo');
  fs.renameSync(repo, here);
  execFileSync('git', ['remote', 'add', 'origin', 'https://user:secret@github.com/a/b.git'], { cwd: here });
  execFileSync('git', ['remote', 'add', 'token', 'https://ghp_tokenvalue@github.com/a/b.git'], { cwd: here });
  const r = await inject('GET', `/api/filesystem/git-repos?path=${encodeURIComponent(tree)}`);
  expect(r.statusCode).toBe(200);
  expect(r.body).not.toContain('secret@');
  expect(r.body).not.toContain('ghp_tokenvalue');
  expect(r.json().data.repositories[0].remotes).toEqual(
    expect.arrayContaining([
      { name: 'origin', url: 'https://user:***@github.com/a/b.git', type: 'https' },
      { name: 'token', url: 'https://***@github.com/a/b.git', type: 'https' },
    ]),
  );
});
