/** Failing, cancelled and rejected attempts: exit codes, process-group kill, 404/409/400 answers, idempotent start. */
import fs from 'node:fs';
import { groupAlive } from '../../lib/process/processGroup';
import { processAlive } from '../../lib/process/procStat';
import { followUpSignal, stopProcessSignal } from '../../workflows/attemptMessages';
import { buildService } from '../../api/services';
import { createTemporalHandle } from '../../lib/temporal/client';
import { eventually, logger, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api, gitOut, recordHistory } from '../support/attemptHelpers';

let stack: TestStack;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  const base = agentConfig();
  // an agent whose JSON events hold other types than its format's (an object where text belongs, strings for counts)
  const hostile = [
    { type: 'item.completed', item: { type: 'agent_message', text: { a: 1 } } },
    { type: 'item.completed', item: null },
    { type: 'turn.completed', usage: { input_tokens: '7', output_tokens: 1e308 } },
  ];
  const script = `cat >/dev/null; ${hostile.map((e) => `echo '${JSON.stringify(e)}'`).join('; ')}; echo done > hostile.txt`;
  // an agent that moves the worktree off its attempt branch, as agents that run git themselves do
  const git = 'git -c user.name=agent -c user.email=agent@example.com';
  const switcher = [
    'cat >/dev/null',
    'case "$ARMADA_PROMPT" in',
    `  *OWNBRANCH*) git checkout -q -b agent-own && echo committed > own.txt && git add own.txt && ${git} commit -q -m own && echo dirty > dirty.txt ;;`,
    `  *DETACH*) ${git} commit -q --allow-empty -m empty && git checkout -q --detach && echo detached > detached.txt ;;`,
    `  *ORPHAN*) git checkout -q --orphan elsewhere && git rm -rq --cached . && echo alone > alone.txt && git add alone.txt && ${git} commit -q -m alone ;;`,
    'esac',
  ].join('\n');
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: {
      ...base,
      agents: {
        ...base.agents,
        hostile: { command: ['sh', '-c', script], format: 'codex-json' },
        switcher: { command: ['sh', '-c', switcher], format: 'text' },
        // a file of its own per attempt (merges that do not conflict), and the same file every time
        own: { command: ['sh', '-c', 'cat >/dev/null; echo "$$" > "own-$$.txt"'], format: 'text' },
        same: { command: ['sh', '-c', 'cat >/dev/null; echo same > same.txt'], format: 'text' },
      },
    },
  });
  h = api(stack);
});
afterAll(async () => {
  await stack.close();
});

const ndjson = (body: string) => body.split('\n').filter(Boolean).map((l) => JSON.parse(l));

describe('attempt failures and bad input', () => {
  test('an agent exiting 3 gives a failed attempt and process with the exit code in the logs', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Please FAIL');
    const { attemptId, processId } = await h.start(taskId);
    const a = await h.until(attemptId, ['completed', 'failed']);
    expect(a.status).toBe('failed');
    expect(a.error).toBe('agent exited with code 3');
    const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
    expect(proc).toMatchObject({ status: 'failed', exitCode: 3, attemptId, taskId, llm: 'scripted' });
    const logs = ndjson((await h.inject('GET', `/api/attempts/${attemptId}/logs`)).body);
    expect(logs.map((l) => l.message)).toContain('agent exited with code 3');
    expect(logs.find((l) => l.message === 'error: the agent could not do it')).toMatchObject({ level: 'error', source: 'stderr' });
    const errorsOnly = ndjson((await h.inject('GET', `/api/attempts/${attemptId}/logs?level=error`)).body);
    expect(errorsOnly.every((l) => l.level === 'error')).toBe(true);
    expect(errorsOnly.length).toBe(2);
    const tail = ndjson((await h.inject('GET', `/api/processes/${processId}/logs?tail=1`)).body);
    expect(tail.map((l) => l.message)).toEqual(['agent exited with code 3']);
    expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('failed');
    await recordHistory(stack, `attempt:${attemptId}`, 'attempt-failed-exit-3');
    const failedEvents = await stack.db.query(`SELECT data FROM events WHERE type = 'attempt.failed' AND data->>'attemptId' = $1`, [attemptId]);
    expect(failedEvents.rows[0].data).toMatchObject({ taskId, attemptId, status: 'failed', error: 'agent exited with code 3' });
    expect((await h.inject('GET', `/api/processes?status=failed&llm=scripted`)).json().data.map((x: { id: string }) => x.id)).toContain(processId);
    // cancelling a finished attempt is a conflict
    const c = await h.inject('POST', `/api/attempts/${attemptId}/cancel`);
    expect(c.statusCode).toBe(409);
    expect(c.json().error.code).toBe('CONFLICT');
  });

  test('a long-running agent is cancelled within 5 s and its process group is gone', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP forever');
    const { attemptId, processId } = await h.start(taskId);
    const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null);
    expect(groupAlive(pid)).toBe(true);
    await eventually(async () => ndjson((await h.inject('GET', `/api/processes/${processId}/logs`)).body).some((l) => l.message.startsWith('sleeping')));
    const t0 = Date.now();
    const r = await h.inject('POST', `/api/attempts/${attemptId}/cancel`);
    expect(r.statusCode).toBe(200);
    expect(r.json().data).toMatchObject({ id: attemptId, status: 'cancelled', cancelledAt: expect.any(String) });
    await eventually(async () => !groupAlive(pid), 5000, 50);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await h.attempt(attemptId)).status).toBe('cancelled');
    expect((await h.inject('GET', `/api/processes/${processId}`)).json().data.status).toBe('cancelled');
    expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('pending');
    expect((await h.inject('POST', `/api/attempts/${attemptId}/cancel`)).statusCode).toBe(409);
    const client = await stack.temporal.client();
    await eventually(async () => (await client.workflow.getHandle(`attempt:${attemptId}`).describe()).status.name !== 'RUNNING', 10_000);
    await recordHistory(stack, `attempt:${attemptId}`, 'attempt-cancelled');
  });

  test('stop a running process: stopped with stoppedAt and duration; the attempt keeps its changes', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP then stop');
    const { attemptId, processId } = await h.start(taskId);
    const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null);
    const r = await h.inject('POST', `/api/execution-processes/${processId}/stop`);
    expect(r.statusCode).toBe(200);
    expect(r.json().data).toMatchObject({ id: processId, status: 'stopped', stoppedAt: expect.any(String), duration: expect.any(Number) });
    await eventually(async () => !groupAlive(pid), 5000, 50);
    const a = await h.until(attemptId, ['completed', 'failed']);
    expect(a.status).toBe('completed');
    expect((await h.inject('POST', `/api/execution-processes/${processId}/stop`)).statusCode).toBe(409);
  });

  test('task cancel cancels its running attempts', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP for task cancel');
    const { attemptId, processId } = await h.start(taskId);
    const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null);
    const r = await h.inject('POST', `/api/tasks/${taskId}/cancel`);
    expect(r.statusCode).toBe(200);
    expect(r.json().data).toMatchObject({ taskId, status: 'cancelled', cancelledAttempts: [attemptId] });
    await eventually(async () => !groupAlive(pid), 5000, 50);
    expect((await h.attempt(attemptId)).status).toBe('cancelled');
  });

  test('merge with no changes and with conflicts: 409 with the files, base branch untouched', async () => {
    const p = await h.project();
    const noop = await h.start(await h.task(p.id, 'NOOP task'));
    await h.until(noop.attemptId, ['completed']);
    const before = gitOut(p.repo, 'rev-parse', 'main');
    const r1 = await h.inject('POST', `/api/attempts/${noop.attemptId}/merge`, { strategy: 'no-ff' });
    expect(r1.statusCode).toBe(409);
    expect(r1.json().error).toMatchObject({ code: 'CONFLICT', details: { reason: 'no_changes', files: [] } });

    const conflicting = await h.start(await h.task(p.id, 'CONFLICT task'));
    await h.until(conflicting.attemptId, ['completed']);
    fs.writeFileSync(`${p.repo}/README.md`, 'line one changed on main\nline 2\n');
    gitOut(p.repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'main moves on');
    const mainHead = gitOut(p.repo, 'rev-parse', 'main');
    expect(mainHead).not.toBe(before);
    for (const strategy of ['ff', 'no-ff', 'squash']) {
      const r2 = await h.inject('POST', `/api/attempts/${conflicting.attemptId}/merge`, { strategy });
      expect(r2.statusCode).toBe(409);
      expect(r2.json().error).toMatchObject({ code: 'CONFLICT', details: { reason: 'conflict', files: ['README.md'] } });
    }
    expect(gitOut(p.repo, 'rev-parse', 'main')).toBe(mainHead);
    expect(gitOut(p.repo, 'status', '--porcelain')).toBe('');
    expect(fs.readFileSync(`${p.repo}/README.md`, 'utf8')).toBe('line one changed on main\nline 2\n');
  });

  test('concurrent merges of different attempts into one base all land, one after another; none is a 500', async () => {
    const p = await h.project();
    const started = await Promise.all(Array.from({ length: 6 }, async (_v, i) => h.start(await h.task(p.id, `own ${i}`), 'own')));
    for (const s of started) expect((await h.until(s.attemptId, ['completed', 'failed'], 60_000)).status).toBe('completed');
    const merged = await Promise.all(started.map((s, i) => h.inject('POST', `/api/attempts/${s.attemptId}/merge`, { strategy: i % 2 ? 'no-ff' : 'squash' })));
    expect(merged.map((r) => r.statusCode)).toEqual(started.map(() => 200));
    const files = gitOut(p.repo, 'ls-tree', '--name-only', 'main').split('\n').filter((f) => f.startsWith('own-'));
    expect(files).toHaveLength(6);
    expect(gitOut(p.repo, 'status', '--porcelain')).toBe(''); // the checked-out main moved with its work tree
    for (const r of merged) expect(gitOut(p.repo, 'merge-base', '--is-ancestor', r.json().data.commitSha, 'main')).toBe('');
  }, 120_000);

  test('a squash whose changes the base already has is 409 no_changes, not an empty commit on the base', async () => {
    const p = await h.project();
    const first = await h.start(await h.task(p.id, 'same 1'), 'same');
    const second = await h.start(await h.task(p.id, 'same 2'), 'same');
    await h.until(first.attemptId, ['completed']);
    await h.until(second.attemptId, ['completed']);
    expect((await h.inject('POST', `/api/attempts/${first.attemptId}/merge`, { strategy: 'squash' })).statusCode).toBe(200);
    const head = gitOut(p.repo, 'rev-parse', 'main');
    const again = await h.inject('POST', `/api/attempts/${second.attemptId}/merge`, { strategy: 'squash' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toMatchObject({ code: 'CONFLICT', details: { reason: 'no_changes', files: [] } });
    expect(gitOut(p.repo, 'rev-parse', 'main')).toBe(head);
  }, 60_000);

  test('bad input: unknown task 404, unknown llm 400, diff path outside the worktree 400, unknown attempt 404', async () => {
    const r = await h.inject('POST', '/api/tasks/nope/start', { llm: 'scripted' });
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ success: false, error: { code: 'TASK_NOT_FOUND' } });
    const p = await h.project();
    const taskId = await h.task(p.id, 'Bad input');
    const u = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'no-such-agent' });
    expect(u.statusCode).toBe(400);
    expect(u.json().error).toMatchObject({ code: 'VALIDATION_ERROR', details: { llm: 'unknown agent "no-such-agent"' } });
    for (const llm of ['toString', '__proto__', 'constructor']) {
      // names of Object.prototype members are unknown agents too, never a 500
      const proto = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm });
      expect(proto.statusCode).toBe(400);
      expect(proto.json().error.code).toBe('VALIDATION_ERROR');
    }
    // no llm in a valid body, no assignee, no project default: a state conflict (409) that says what to do
    const none = await h.inject('POST', `/api/tasks/${taskId}/start`, {});
    expect(none.statusCode).toBe(409);
    expect(none.json().error).toMatchObject({ code: 'AGENT_REQUIRED', details: { llm: expect.stringContaining('is required') } });
    expect(none.json().error.message).toContain('pass "llm"');
    expect((await stack.db.query('SELECT count(*)::int AS n FROM attempts WHERE task_id = $1', [taskId])).rows[0].n).toBe(0);
    const { attemptId } = await h.start(taskId);
    await h.until(attemptId, ['completed']);
    for (const file of ['../x', '/etc/passwd', 'src/../../x', '.git/config']) {
      const d = await h.inject('GET', `/api/attempts/${attemptId}/diff?file=${encodeURIComponent(file)}`);
      expect(d.statusCode).toBe(400);
      expect(d.json().error.code).toBe('VALIDATION_ERROR');
    }
    expect((await h.inject('GET', `/api/attempts/${attemptId}/diff?format=xml`)).statusCode).toBe(400);
    expect((await h.inject('GET', '/api/attempts/nope')).statusCode).toBe(404);
    expect((await h.inject('POST', '/api/attempts/nope/cancel')).statusCode).toBe(404);
    expect((await h.inject('DELETE', '/api/attempts/nope')).statusCode).toBe(404);
    expect((await h.inject('GET', '/api/processes/nope')).statusCode).toBe(404);
  });

  test('two concurrent starts with the same Idempotency-Key start one attempt; keys are whole and at most 200 characters', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'NOOP idempotent');
    const headers = { 'idempotency-key': 'key-123' };
    const [x, y] = await Promise.all([h.start(taskId, 'scripted', headers), h.start(taskId, 'scripted', headers)]);
    expect(x.attemptId).toBe(y.attemptId);
    expect(x.processId).toBe(y.processId);
    expect((await stack.db.query('SELECT count(*)::int AS n FROM attempts WHERE task_id = $1', [taskId])).rows[0].n).toBe(1);
    const other = await h.start(taskId, 'scripted', { 'idempotency-key': 'key-456' });
    expect(other.attemptId).not.toBe(x.attemptId);
    // a key of the documented 200 characters works; a longer one is refused, not cut to 200 (which merged two keys
    // alike in their first 200 characters into one)
    const long = 'k'.repeat(199);
    const a200 = await h.start(taskId, 'scripted', { 'idempotency-key': `${long}a` });
    const b200 = await h.start(taskId, 'scripted', { 'idempotency-key': `${long}b` });
    expect(a200.attemptId).not.toBe(b200.attemptId);
    const tooLong = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' }, { 'idempotency-key': `${long}a!` });
    expect([tooLong.statusCode, tooLong.json().error]).toEqual([
      400,
      { code: 'VALIDATION_ERROR', message: 'Request headers are invalid: idempotency-key must NOT have more than 200 characters', details: { 'idempotency-key': 'must NOT have more than 200 characters' } },
    ]);
    await h.until(x.attemptId, ['completed']);
    await h.until(other.attemptId, ['completed']);
    await h.until(a200.attemptId, ['completed']);
    await h.until(b200.attemptId, ['completed']);
  });

  test('POST /api/attempts then start; GET lists; compare; DELETE removes the worktree', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Created first');
    const c = await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted', options: { timeout: 60 } });
    expect(c.statusCode).toBe(200);
    expect(c.json().data).toMatchObject({ taskId, llm: 'scripted', status: 'created' });
    const id = c.json().data.id;
    const s = await h.inject('POST', `/api/attempts/${id}/start`);
    expect(s.json().data).toMatchObject({ id, status: 'running', processId: expect.any(String) });
    expect((await h.inject('POST', `/api/attempts/${id}/start`)).statusCode).toBe(409);
    const a = await h.until(id, ['completed']);
    const second = await h.start(await h.task(p.id, 'NOOP second'));
    await h.until(second.attemptId, ['completed']);
    const list = (await h.inject('GET', `/api/attempts?taskId=${taskId}&status=completed`)).json();
    expect(list.data.map((x: { id: string }) => x.id)).toEqual([id]);
    expect(list.pagination.total).toBe(1);
    const byTask = (await h.inject('GET', `/api/tasks/${taskId}/attempts`)).json().data;
    expect(byTask).toEqual([expect.objectContaining({ id, status: 'completed', filesChanged: 2, linesAdded: 4 })]);
    const cmp = (await h.inject('POST', '/api/attempts/compare', { attemptIds: [id, second.attemptId] })).json().data;
    expect(cmp.attempts.map((x: { id: string }) => x.id)).toEqual([id, second.attemptId]);
    expect(cmp.attempts[0]).toMatchObject({ filesChanged: 2, linesAdded: 4, files: expect.arrayContaining(['README.md', 'src/added.txt']) });
    expect(cmp.comparison.smallerChangeAttemptId).toBe(second.attemptId);
    const taskLogs = (await h.inject('GET', `/api/tasks/${taskId}/logs?level=info`)).body;
    expect(ndjson(taskLogs).map((l) => l.message)).toContain('done');
    const del = await h.inject('DELETE', `/api/attempts/${id}`);
    expect(del.statusCode).toBe(200);
    expect(del.json().data).toEqual({ deleted: true, attemptId: id, cleanup: 'done' });
    expect(fs.existsSync(a.worktreePath)).toBe(false);
    expect(gitOut(p.repo, 'branch', '--list', a.branch)).toBe('');
    expect((await h.inject('GET', `/api/attempts/${id}`)).statusCode).toBe(404);
  });

  test('options.timeout bounds the run: the agent is stopped and the attempt fails', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP past the timeout');
    const c = await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted', options: { timeout: 1 } });
    const id = c.json().data.id;
    const { processId } = (await h.inject('POST', `/api/attempts/${id}/start`)).json().data;
    const a = await h.until(id, ['failed', 'completed'], 20_000);
    expect(a).toMatchObject({ status: 'failed', error: 'agent timed out after 1 s' });
    const proc = (await h.inject('GET', `/api/processes/${processId}`)).json().data;
    expect(proc.status).toBe('failed');
    expect(groupAlive(proc.pid)).toBe(false);
  });

  test('project setup_script runs in the worktree before the agent; a failing one fails the attempt', async () => {
    const repo = (await h.project()).repo;
    const ok = await h.inject('POST', '/api/projects', { name: 'with-setup', repository: { url: repo }, setup_script: 'echo preparing; echo ready > .setup-done' });
    expect(ok.statusCode).toBe(201);
    const good = await h.start(await h.task(ok.json().data.id, 'Edit after setup'));
    const a = await h.until(good.attemptId, ['completed', 'failed']);
    expect(a.status).toBe('completed');
    const logs = ndjson((await h.inject('GET', `/api/attempts/${good.attemptId}/logs`)).body);
    expect(logs.filter((l) => l.source === 'setup').map((l) => l.message)).toEqual(['preparing', 'setup script exited with code 0']);
    expect(a.output.changes).toContain('.setup-done');

    const bad = await h.inject('POST', '/api/projects', { name: 'bad-setup', repository: { url: repo }, setup_script: 'echo broken >&2; exit 7' });
    const r = await h.start(await h.task(bad.json().data.id, 'Never runs'));
    const b = await h.until(r.attemptId, ['completed', 'failed']);
    expect(b.status).toBe('failed');
    expect(b.error).toContain('setup script failed with exit code 7');
    expect((await h.inject('GET', `/api/processes/${r.processId}`)).json().data).toMatchObject({ status: 'failed', error: expect.stringContaining('setup script failed') });
    const badLogs = ndjson((await h.inject('GET', `/api/attempts/${r.attemptId}/logs`)).body);
    expect(badLogs.map((l) => l.message)).toEqual(expect.arrayContaining(['broken', 'setup script exited with code 7']));
  });

  test("what an agent leaves running when it exits is stopped before its changes are committed; a setup script's background service lives until the worktree is removed", async () => {
    const repo = (await h.project()).repo;
    const service = `${repo}.service-pid`; // outside the worktree, so not part of the agent's changes
    const p = await h.inject('POST', '/api/projects', { name: 'leaves', repository: { url: repo }, setup_script: `sleep 120 >/dev/null 2>&1 & echo $! > ${service}` });
    const started = await h.start(await h.task(p.json().data.id, 'LEAVE something behind'));
    const a = await h.until(started.attemptId, ['completed', 'failed']);
    expect(a.status).toBe('completed');
    const logs = ndjson((await h.inject('GET', `/api/attempts/${started.attemptId}/logs`)).body);
    const left = Number(/^left (\d+)$/.exec(logs.map((l) => l.message).find((m) => m.startsWith('left ')) ?? '')?.[1]);
    expect(left).toBeGreaterThan(0);
    expect(logs).toContainEqual(expect.objectContaining({ level: 'warn', message: expect.stringMatching(/^stopped 1 process the agent left running when it exited/) }));
    expect(processAlive(left)).toBe(false);
    // the setup script's service is still there for the agent's follow-ups, and goes with the worktree
    const servicePid = Number(fs.readFileSync(service, 'utf8'));
    expect(processAlive(servicePid)).toBe(true);
    expect((await h.inject('DELETE', `/api/attempts/${started.attemptId}`)).statusCode).toBe(200);
    await eventually(async () => !processAlive(servicePid));
    fs.rmSync(service, { force: true });
  });

  test('JSON events of unexpected types from an agent do not stop the worker: the attempt completes with what could be read', async () => {
    const p = await h.project();
    const started = await h.start(await h.task(p.id, 'Print odd JSON'), 'hostile');
    const a = await h.until(started.attemptId, ['completed', 'failed']);
    expect(a).toMatchObject({ status: 'completed', changes: expect.objectContaining({ filesCreated: 1 }) });
    expect(a.cost).toMatchObject({ inputTokens: 0, outputTokens: 9007199254740991 });
    const logs = ndjson((await h.inject('GET', `/api/attempts/${started.attemptId}/logs`)).body);
    expect(logs.map((l) => l.message)).toEqual(expect.arrayContaining(['{"a":1}', 'item', 'turn completed (0 in, 9007199254740991 out)', 'agent exited with code 0']));
    // the same worker goes on with the next attempt
    expect((await h.until((await h.start(await h.task(p.id, 'After the odd one'))).attemptId, ['completed', 'failed'])).status).toBe('completed');
  });

  test("an agent that switches the worktree to a branch of its own or detaches HEAD: its commits and edits land on the attempt branch; one that checks out an unrelated history fails the attempt saying where its work is", async () => {
    const p = await h.project();
    const own = await h.start(await h.task(p.id, 'OWNBRANCH please'), 'switcher');
    const a = await h.until(own.attemptId, ['completed', 'failed']);
    expect(a).toMatchObject({ status: 'completed', changes: expect.objectContaining({ filesCreated: 2 }) });
    // the attempt branch holds the agent's commit and, committed by Armada, its uncommitted file
    expect(gitOut(p.repo, 'show', `${a.branch}:own.txt`)).toBe('committed');
    expect(gitOut(p.repo, 'show', `${a.branch}:dirty.txt`)).toBe('dirty');
    const diff = (await h.inject('GET', `/api/attempts/${own.attemptId}/diff`)).json().data;
    expect(diff.files.map((f: { path: string }) => f.path).sort()).toEqual(['dirty.txt', 'own.txt']);
    expect((await h.inject('POST', `/api/attempts/${own.attemptId}/merge`, {})).statusCode).toBe(200);
    expect(gitOut(p.repo, 'show', 'main:own.txt')).toBe('committed');

    const detached = await h.start(await h.task(p.id, 'DETACH please'), 'switcher');
    const d = await h.until(detached.attemptId, ['completed', 'failed']);
    expect(d.status).toBe('completed');
    expect(gitOut(p.repo, 'show', `${d.branch}:detached.txt`)).toBe('detached');

    const orphan = await h.start(await h.task(p.id, 'ORPHAN please'), 'switcher');
    const o = await h.until(orphan.attemptId, ['completed', 'failed']);
    expect(o.status).toBe('failed');
    expect(o.error).toMatch(/^the agent left the worktree on branch "elsewhere", which does not hold the attempt's base commit [0-9a-f]{12}; its work is there, not on armada\//);
  });

  test('an agent profile with maxConcurrent 1 runs one process at a time; the other waits queued', async () => {
    const p = await h.project();
    const [x, y] = await Promise.all([h.start(await h.task(p.id, 'SLOWEDIT one'), 'single'), h.start(await h.task(p.id, 'SLOWEDIT two'), 'single')]);
    await h.until(x.attemptId, ['completed'], 30_000);
    await h.until(y.attemptId, ['completed'], 30_000);
    const procs = await Promise.all([x.processId, y.processId].map(async (id) => (await h.inject('GET', `/api/processes/${id}`)).json().data));
    procs.sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
    const [first, second] = procs as [{ id: string; startedAt: string; finishedAt: string }, { id: string; startedAt: string; finishedAt: string }];
    expect(Date.parse(second.startedAt)).toBeGreaterThanOrEqual(Date.parse(first.finishedAt));
    const logs = ndjson((await h.inject('GET', `/api/processes/${second.id}/logs`)).body);
    expect(logs[0]?.message).toBe('waiting for a free single slot (maxConcurrent 1)');
  });

  test('the stopProcess signal alone (no API call) stops the running process', async () => {
    const p = await h.project();
    const { attemptId, processId } = await h.start(await h.task(p.id, 'SLEEP until signalled'));
    const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null);
    const client = await stack.temporal.client();
    await client.workflow.getHandle(`attempt:${attemptId}`).signal(stopProcessSignal, { processId });
    await eventually(async () => !groupAlive(pid), 5000, 50);
    const a = await h.until(attemptId, ['completed', 'failed']);
    expect(a.status).toBe('completed');
    expect((await h.inject('GET', `/api/processes/${processId}`)).json().data).toMatchObject({ status: 'stopped', stoppedAt: expect.any(String) });
  });

  test('Temporal unreachable at start: 503 SERVICE_UNAVAILABLE and nothing written', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'NOOP without Temporal');
    const dead = createTemporalHandle('127.0.0.1:1', 'default');
    const app = await buildService('task', { db: stack.db, config: stack.config, keys: stack.keys, temporal: dead, logger, metrics: stack.metrics });
    try {
      const r = await app.inject({ method: 'POST', url: `/api/tasks/${taskId}/start`, payload: { llm: 'scripted' } });
      expect(r.statusCode).toBe(503);
      expect(r.json().error.code).toBe('SERVICE_UNAVAILABLE');
      expect((await stack.db.query('SELECT count(*)::int AS n FROM attempts WHERE task_id = $1', [taskId])).rows[0].n).toBe(0);
      expect((await h.inject('GET', `/api/tasks/${taskId}`)).json().data.status).toBe('pending');
    } finally {
      await app.close();
      await dead.close();
    }
  }, 30_000);

  test("a follow-up reaching the run of an attempt whose row is gone (deleted in plain SQL, no API delete): the run removes the worktree and branch and ends, starting no agent", async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Edit, then the rows go');
    const { attemptId } = await h.start(taskId);
    const a = await h.until(attemptId, ['completed', 'failed'], 60_000);
    expect(a.status).toBe('completed');
    const worktree = `${stack.config.home}/worktrees/${attemptId}`;
    expect(fs.existsSync(worktree)).toBe(true);
    await stack.db.query('DELETE FROM tasks WHERE id = $1', [taskId]);
    const handle = (await stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
    await handle.signal(followUpSignal, { prompt: 'one more thing' });
    await handle.result();
    expect(fs.existsSync(worktree)).toBe(false);
    expect(gitOut(p.repo, 'branch', '--list', a.branch)).toBe('');
    // resumeAttempt found no row (follow-up-resumes-in-one): no second runAgent
    const history = await handle.fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(scheduled).toEqual(['prepareWorktree', 'runAgent', 'resumeAttempt', 'attemptStatus', 'removeWorktree']);
  });

  test('deleting the task of a running attempt stops its agent and removes its worktree and branch', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP then the task goes');
    const { attemptId, processId } = await h.start(taskId);
    const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null);
    const a = await h.attempt(attemptId);
    await eventually(async () => fs.existsSync(`${stack.config.home}/worktrees/${attemptId}`));
    expect((await h.inject('DELETE', `/api/tasks/${taskId}`)).statusCode).toBe(200);
    await eventually(async () => !groupAlive(pid), 5000, 50);
    await eventually(async () => !fs.existsSync(`${stack.config.home}/worktrees/${attemptId}`) && gitOut(p.repo, 'branch', '--list', a.branch) === '', 15_000);
  });
});
