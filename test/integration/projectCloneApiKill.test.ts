/**
 * kill -9 of `armada api` while a project made from a repository URL is being created: its row is written and its
 * clone workflow is being started (the start held in a TCP proxy in front of Temporal, so the moment is certain).
 * The project must end consistent on its own: either not there at all (no row, no clone) or there with its clone
 * made, never a row left `cloning` with no clone coming (which also kept the name, so a retry was a 409); and the
 * same create sent again works. Real git, PostgreSQL, Temporal and worker; assertions on rows, HTTP bodies and disk.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { api } from '../support/attemptHelpers';
import { env, eventually, makeGitRepo, startTestStack, TEST_API_KEY, type TestStack } from '../support/harness';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy';

jest.setTimeout(180_000);

let stack: TestStack;
let proxy: TcpProxy;
let killed: ApiProcess | undefined;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true });
  proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
}, 120_000);
afterAll(async () => {
  await killed?.stop();
  await proxy?.close();
  await stack?.close();
});

/** A bare repository, as a remote would be: a project made from its file:// URL gets a managed clone. */
function bareRepo(): string {
  const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bare-'));
  execFileSync('git', ['clone', '-q', '--bare', makeGitRepo({ 'README.md': '# cloned\n' }), bare]);
  return bare;
}

test('kill -9 of armada api while it starts the clone of a project it is creating: no row left cloning; the create sent again makes the project and its clone', async () => {
  const h = api(stack);
  const name = 'cloned while the api died';
  const url = `file://${bareRepo()}`;
  killed = await spawnApi({
    home: stack.config.home,
    databaseUrl: stack.dbUrl,
    temporalAddress: proxy.address,
    services: ['task'],
    env: { ARMADA_TASK_QUEUE: stack.config.temporal.taskQueue, PGAPPNAME: 'clone-api-killed' },
  });
  proxy.setMode('hold'); // what it sends Temporal from now on (the clone workflow's start) is held
  const answer = fetch(`${killed.base('task')}/api/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
    body: JSON.stringify({ name, repository: { url } }),
  }).then(
    (r) => r.status,
    () => 'no answer' as const,
  );
  // the row is written (committed, or in the open transaction that starts the workflow) and the start is on its way
  await eventually(async () => {
    const row = await stack.db.query('SELECT 1 FROM projects WHERE name = $1', [name]);
    const open = await stack.db.query(
      "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'clone-api-killed' AND state = 'idle in transaction' AND query ILIKE '%advisory%'",
    );
    return (row.rowCount ?? 0) + (open.rowCount ?? 0) > 0;
  }, 30_000, 50);
  await new Promise((r) => setTimeout(r, 500));
  killed.child.kill('SIGKILL');
  expect(await answer).toBe('no answer');
  proxy.setMode('forward'); // Temporal answers again (the held start goes through or died with the process)

  // consistent on its own: no row (and no clone), or the row with its clone made; never `cloning` for good
  const end = await eventually(async () => {
    const { rows } = await stack.db.query<{ id: string; clone_status: string; git_repo_path: string | null }>(
      'SELECT id, clone_status, git_repo_path FROM projects WHERE name = $1',
      [name],
    );
    const row = rows[0];
    if (!row) return { row: undefined };
    return row.clone_status === 'cloning' ? undefined : { row };
  }, 45_000, 250);
  const repos = path.join(stack.config.home, 'repos');
  if (end.row) {
    expect(end.row.clone_status).toBe('ready');
    expect(fs.readFileSync(path.join(end.row.git_repo_path as string, 'README.md'), 'utf8')).toBe('# cloned\n');
  } else {
    // nothing of it on disk once any clone workflow the held start made has ended
    await new Promise((r) => setTimeout(r, 3000));
    expect(fs.existsSync(repos) ? fs.readdirSync(repos).filter((n) => !n.startsWith('.')) : []).toEqual([]);
  }

  // the create sent again: 201 (no row was left holding the name) or 409 PROJECT_EXISTS for the project that was made
  const again = await h.inject('POST', '/api/projects', { name, repository: { url } });
  if (end.row) {
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ success: false, error: { code: 'PROJECT_EXISTS' } });
    return;
  }
  expect(again.statusCode).toBe(201);
  const id = again.json().data.id as string;
  const ready = await eventually(async () => {
    const p = (await h.inject('GET', `/api/projects/${id}`)).json().data;
    return p.repository.status === 'ready' ? p : undefined;
  }, 30_000);
  expect(ready.git_repo_path).toBe(path.join(repos, id));
  expect(fs.readFileSync(path.join(ready.git_repo_path, 'README.md'), 'utf8')).toBe('# cloned\n');
});
