/**
 * Outside fuzzing, round nine: the task service at the level of meaning (what an answer says), not of bytes.
 * Found and fixed:
 * - the diff stream's `event: end` carried `{attemptId}` alone, the same end for an attempt that completed, failed,
 *   was cancelled or deleted while followed: a client read the attempt again to know. Now `{attemptId, status}`, the
 *   status it ended in or `deleted`, as the SSE log stream's `end` says `{processId, status}` (docs/attempts.md);
 * - a `labels` filter of commas and blanks only (`labels=,`, `labels=%20`) named no label and was dropped: every task
 *   was listed, as if no filter had been sent (an empty one was already a 400). Now a 400 naming `labels`, and the
 *   document's pattern says so.
 * - a start that named no agent, where the task's assignee (free text, often a person) or the project's defaultLLM
 *   named none configured, was the 400 of an unknown `llm`, a field the request did not hold; now a 409
 *   `AGENT_UNKNOWN` naming `assignee` or `defaultLLM`, as the missing agent's 409 `AGENT_REQUIRED` (docs/attempts.md).
 * - a blank assignee (`"   "`) was stored, a task assigned to nobody one could see, and one with blanks around
 *   (`" scripted "`) as sent: the `assignee` filter did not find it and a start without `llm` did not run it. Now a
 *   blank one is a 400 naming `assignee` (the pattern of titles), and one with blanks around is stored trimmed, as
 *   titles and labels are (docs/task-service.md).
 * - the local user (local mode, and the service key's user) was the host's git user.email as written, while every
 *   other user (X-User-Email, configured users, an approval's approvers) is lower-cased: with capitals in it, as many
 *   addresses have, an approval naming it was never pending for it and its answer a 403 "… is not an approver". Now
 *   read in lower case (docs/approvals.md, docs/security.md).
 * Decided and documented (docs/task-service.md): list pages are offset pages; a row created between two reads of the
 * default newest-first order comes again first on the next page; oldest-first (`sort=createdAt`) lists it at the end,
 * and nothing read before is listed again. An `Idempotency-Key` sent again with another body was answered with the
 * first start (decided then: the key names the start); since session 54 it is a 422 IDEMPOTENCY_KEY_REUSED that
 * starts nothing, as draft-ietf-httpapi-idempotency-key-header says (docs/attempts.md).
 * What held, kept as guards: an agent's attempt deleted while its log and diff streams are followed (each ends within
 * seconds, the log sockets with 1000, the SSE log stream with `end` cancelled or deleted; the ids then a 404 or 4404);
 * a task title that reads as a git option or ref (`--orphan=x`, `../..`, `@{-1}`, `HEAD`,
 * a trailing `.lock.`, RTL marks, a decomposed é, 150 emoji) reaches git only as a commit message: the attempt's
 * branch and worktree are named by ids, the agent gets the title on stdin, and a squash merge's commit message is the
 * title byte for byte.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { agentConfig, api, gitOut } from '../support/attemptHelpers';
import { eventually } from '../support/harness';
import { startOutsideServices, type Json } from '../support/outsideServices';

/**
 * The services' local user is git's user.email where the service starts (no key, no X-User-Email): here one written
 * with capitals, as many are, from the config of a repository the stack is started in (jest's process.env is the
 * test's copy, which git, a child of the real process, does not see); the usual directory again once it is up.
 */
const startDir = process.cwd();
const localUserRepo = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-fuzz9-user-'));
const o = startOutsideServices({
  services: ['task'],
  options: () => {
    execFileSync('git', ['init', '-q', localUserRepo]);
    execFileSync('git', ['config', 'user.email', 'Local.User@Example.COM'], { cwd: localUserRepo });
    process.chdir(localUserRepo);
    return { worker: true, file: agentConfig() };
  },
  after: async () => process.chdir(startDir),
  close: async () => {
    process.chdir(startDir);
    fs.rmSync(localUserRepo, { recursive: true, force: true });
  },
});
const { ports } = o;

/** An SSE request to the task service: its status at once, then its whole text once the server ends it. */
function sse(target: string): Promise<{ status: number; text: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: ports.task, path: target }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      resolve({ status: res.statusCode ?? 0, text: new Promise((done) => res.on('end', () => done(text))) });
    });
    req.on('error', reject);
  });
}

/** The events of an SSE text: `{event, data}` (data parsed), in order. */
const events = (text: string) =>
  text
    .split('\n\n')
    .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], data: /^data: (.*)$/m.exec(block)?.[1] }))
    .filter((e) => e.event !== undefined)
    .map((e) => ({ event: e.event, data: JSON.parse(e.data ?? 'null') as Json }));

/** A WebSocket to the task service, open; `closed` resolves with the server's close code and reason. */
function socket(target: string): Promise<{ ws: WebSocket; closed: Promise<[number, string]> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${ports.task}${target}`);
    const closed = new Promise<[number, string]>((r) => ws.on('close', (code, reason) => r([code, reason.toString()])));
    ws.once('open', () => resolve({ ws, closed }));
    ws.once('error', reject);
  });
}

describe('a stream whose process or attempt is deleted while it is followed', () => {
  test('every follower is told how it ended, at once: the log streams end, the diff stream says cancelled or deleted (its end said nothing)', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const { attemptId, processId } = await h.start(await h.task(project.id, 'SLEEP while followed, then deleted'));
    // the agent runs (its process row has its pid), and every stream follows it
    await eventually(async () => (await o.stack.db.query("SELECT 1 FROM processes WHERE id = $1 AND status = 'running' AND pid IS NOT NULL", [processId])).rowCount || undefined, 20_000, 50);
    const logs = await sse(`/api/events/processes/${processId}/logs`);
    const diff = await sse(`/api/events/task-attempts/${attemptId}/diff`);
    expect([logs.status, diff.status]).toEqual([200, 200]);
    const normalized = await socket(`/ws/execution-processes/${processId}/logs/normalized`);
    const raw = await socket(`/ws/execution-processes/${processId}/logs/raw?notices=true`);

    const deleted = await h.inject('DELETE', `/api/attempts/${attemptId}`);
    expect(deleted.statusCode).toBe(200);
    // within the log feed's safety re-check (5 s) and the diff reader's next look (1 s), whatever came first
    const within = async <T>(p: Promise<T>): Promise<T> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('still open 15 s after the delete')), 15_000)))]);
      } finally {
        clearTimeout(timer);
      }
    };
    // the delete cancels the attempt (its process with it) before the rows go: a stream read the end of one or the other
    expect(await within(normalized.closed)).toEqual([1000, 'process finished']);
    expect(await within(raw.closed)).toEqual([1000, 'process finished']);
    const logEnd = events(await within(logs.text)).at(-1);
    expect([{ event: 'end', data: { processId, status: 'cancelled' } }, { event: 'end', data: { processId, status: 'deleted' } }]).toContainEqual(logEnd);
    const diffEnd = events(await within(diff.text)).at(-1);
    expect([{ event: 'end', data: { attemptId, status: 'cancelled' } }, { event: 'end', data: { attemptId, status: 'deleted' } }]).toContainEqual(diffEnd);

    // and now they are gone: the SSE routes' 404 in the envelope, the sockets' 4404
    const again = await sse(`/api/events/processes/${processId}/logs`);
    expect([again.status, events(await again.text)]).toEqual([404, []]);
    expect((await sse(`/api/events/task-attempts/${attemptId}/diff`)).status).toBe(404);
    const late = await socket(`/ws/execution-processes/${processId}/logs/normalized`);
    expect((await late.closed)[0]).toBe(4404);
  }, 40_000);

  test("an attempt that ends while its diff is followed: the diff stream's end says its status", async () => {
    const h = api(o.stack);
    const project = await h.project();
    const { attemptId } = await h.start(await h.task(project.id, 'diff followed to the end'));
    const diff = await sse(`/api/events/task-attempts/${attemptId}/diff`);
    expect(diff.status).toBe(200);
    const seen = events(await diff.text);
    const last = seen.at(-1);
    expect(last).toEqual({ event: 'end', data: { attemptId, status: 'completed' } });
    // the last diff before it holds the agent's files (its own `status` is the one it was read at: the worktree's last
    // change, the agent's commit, may come before the attempt is recorded completed, and an unchanged diff is not sent again)
    const lastDiff = seen.filter((e) => e.event === 'diff').at(-1)?.data as { files: { path: string }[] };
    expect(lastDiff.files.map((f) => f.path).sort()).toEqual(['README.md', 'src/added.txt']);
  }, 30_000);
});

describe('offset pages while rows are created between two reads', () => {
  test('newest first, a task created between the pages comes again first on the next; oldest first, it comes at the end and nothing is listed twice', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await h.task(project.id, `paged ${i}`));
    const page = async (n: number, sort?: string) => {
      const res = await h.inject('GET', `/api/projects/${project.id}/tasks?limit=2&page=${n}${sort ? `&sort=${sort}` : ''}`);
      expect(res.statusCode).toBe(200);
      return (res.json().data as { id: string }[]).map((t) => t.id);
    };
    const newest1 = await page(1);
    const oldest1 = await page(1, 'createdAt');
    expect([newest1, oldest1]).toEqual([
      [ids[3], ids[2]],
      [ids[0], ids[1]],
    ]);
    const added = await h.task(project.id, 'paged, created between two pages');
    // newest first: everything moved one place down, so page 2 starts with the last task of page 1
    expect(await page(2)).toEqual([ids[2], ids[1]]);
    // oldest first: the new task is at the end; pages 2 and 3 hold the rest, once each
    expect([...oldest1, ...(await page(2, 'createdAt')), ...(await page(3, 'createdAt'))]).toEqual([...ids, added]);
  });
});

describe('a filter that names nothing', () => {
  test('a labels filter of commas and blanks only is a 400 naming labels (it was dropped: every task listed); empty parts beside a label are skipped', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const labelled = await h.inject('POST', '/api/tasks', { projectId: project.id, title: 'labelled', labels: ['urgent'] });
    expect(labelled.statusCode).toBe(201);
    await h.task(project.id, 'unlabelled');
    for (const value of [',', '%20', '%20,%20,', '%E3%80%80']) {
      for (const base of [`/api/projects/${project.id}/tasks`, `/api/tasks?projectId=${project.id}&`]) {
        const res = await h.inject('GET', `${base}${base.endsWith('&') ? '' : '?'}labels=${value}`);
        expect({ value, status: res.statusCode, error: res.json().error }).toEqual({
          value,
          status: 400,
          error: { code: 'VALIDATION_ERROR', message: 'Request query is invalid: labels must name a label: commas and blanks alone name none', details: { labels: 'must name a label: commas and blanks alone name none' } },
        });
      }
    }
    const some = await h.inject('GET', `/api/projects/${project.id}/tasks?labels=,%20urgent%20,,`);
    expect([some.statusCode, (some.json().data as Json[]).map((t) => t.title)]).toEqual([200, ['labelled']]);
  });
});

describe('an assignee of blanks, or with blanks around it', () => {
  test('a blank one is a 400 naming assignee (it was stored: a task assigned to "   "); one with blanks around is stored trimmed, so the filter and a start find it', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const blankError = { code: 'VALIDATION_ERROR', message: expect.stringMatching(/^Request body is invalid: (updates\.)?assignee must match pattern /), details: expect.any(Object) };
    const before = await o.count('tasks');
    for (const assignee of ['   ', '\u3000', '\u00a0 ']) {
      const res = await h.inject('POST', '/api/tasks', { projectId: project.id, title: 'blank assignee', assignee });
      expect({ assignee, status: res.statusCode, error: res.json().error }).toEqual({ assignee, status: 400, error: blankError });
    }
    expect(await o.count('tasks')).toBe(before);
    const created = await h.inject('POST', '/api/tasks', { projectId: project.id, title: 'padded assignee', assignee: '  scripted ' });
    expect([created.statusCode, created.json().data.assignee]).toEqual([201, 'scripted']);
    const taskId = created.json().data.id as string;
    const patched = await h.inject('PATCH', `/api/tasks/${taskId}`, { assignee: ' scripted\u3000' });
    expect([patched.statusCode, patched.json().data.assignee]).toEqual([200, 'scripted']);
    const blankPatch = await h.inject('PATCH', `/api/tasks/${taskId}`, { assignee: '  ' });
    expect([blankPatch.statusCode, blankPatch.json().error.code]).toEqual([400, 'VALIDATION_ERROR']);
    const bulk = await h.inject('POST', '/api/tasks/bulk/update', { taskIds: [taskId], updates: { assignee: '\u00a0scripted ' } });
    expect([bulk.statusCode, (bulk.json().data.tasks as Json[])[0]?.assignee]).toEqual([200, 'scripted']);
    const listed = await h.inject('GET', `/api/projects/${project.id}/tasks?assignee=scripted`);
    expect((listed.json().data as Json[]).map((t) => t.id)).toEqual([taskId]);
    // a start without llm runs the assignee's agent (it was "Unknown agent \"  scripted \"")
    const started = await h.inject('POST', `/api/tasks/${taskId}/start`, {});
    expect([started.statusCode, started.json().data?.attemptId === undefined]).toEqual([200, false]);
    await h.until(started.json().data.attemptId as string, ['completed']);
  });
});

describe("a start that names no agent, where the task's assignee or the project's default names none configured", () => {
  test('a 409 AGENT_UNKNOWN naming that field (it was a 400 naming llm, which the request did not hold); nothing is written', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const person = await h.inject('POST', '/api/tasks', { projectId: project.id, title: 'assigned to a person', assignee: 'alice@example.com' });
    expect(person.statusCode).toBe(201);
    const taskId = person.json().data.id as string;
    const unknown = (field: string, whose: string, name: string) => ({
      code: 'AGENT_UNKNOWN',
      message: `No agent to run: ${whose} "${name}" is no configured agent; pass "llm" (GET /api/projects/:id lists them in config.llms), or change ${whose}`,
      details: { [field]: `"${name}" is no configured agent` },
    });
    for (const [method, url, body] of [
      ['POST', `/api/tasks/${taskId}/start`, {}],
      ['POST', '/api/attempts', { taskId }],
    ] as const) {
      const res = await h.inject(method, url, body);
      expect([res.statusCode, res.json().error]).toEqual([409, unknown('assignee', "the task's assignee", 'alice@example.com')]);
    }
    // without an assignee, the project's defaultLLM
    const patched = await h.inject('PATCH', `/api/projects/${project.id}`, { defaultLLM: 'nobody' });
    expect(patched.statusCode).toBe(200);
    const other = await h.task(project.id, 'no assignee');
    const res = await h.inject('POST', `/api/tasks/${other}/start`, {});
    expect([res.statusCode, res.json().error]).toEqual([409, unknown('defaultLLM', "the project's defaultLLM", 'nobody')]);
    // an llm the request names is still its own 400; and naming a configured one starts
    const named = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'nobody' });
    expect([named.statusCode, named.json().error.details]).toEqual([400, { llm: 'unknown agent "nobody"' }]);
    const { rows } = await o.stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.project_id = $1', [project.id]);
    expect(rows[0]?.n).toBe(0);
  });
});

describe('the local user, whose git user.email has capitals', () => {
  test('is an approver named in any case (it was a 403 "Local.User@Example.COM is not an approver"): pending for it, answered by it', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const taskId = await h.task(project.id, 'approved by the local user');
    const created = await h.inject('POST', '/api/attempts', { taskId, llm: 'scripted' });
    const attemptId = created.json().data.id as string;
    // requested by someone else, naming the local user as it writes itself
    const approval = await h.inject('POST', '/api/approvals', { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', approvers: ['Local.User@Example.COM'] }, { 'x-user-email': 'ann@example.com' });
    expect(approval.statusCode).toBe(201);
    const id = approval.json().data.id as string;
    expect(approval.json().data.approvers).toEqual(['local.user@example.com']);
    // the local user (no key, no X-User-Email) is that approver
    const pending = await h.inject('GET', '/api/approvals/pending');
    expect((pending.json().data as Json[]).map((a) => a.id)).toContain(id);
    const answered = await h.inject('POST', `/api/approvals/${id}/respond`, { decision: 'approved' });
    expect([answered.statusCode, answered.json().data?.approvalStatus, answered.json().error]).toEqual([200, 'approved', undefined]);
    // and what it makes names it in the same form as the header's users: lower case
    const own = await h.inject('POST', '/api/tasks', { projectId: project.id, title: 'made by the local user' });
    expect(own.json().data.createdBy).toBe('local.user@example.com');
  });
});

describe('an Idempotency-Key sent again with another body', () => {
  test('is a 422 IDEMPOTENCY_KEY_REUSED that starts nothing; the same body (in any key order) is answered with the first start', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const taskId = await h.task(project.id, 'started once under one key');
    const key = { 'idempotency-key': `fuzz9-${Date.now()}` };
    const first = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'scripted', description: 'first body' }, key);
    expect(first.statusCode).toBe(200);
    const attemptId = first.json().data.attemptId as string;
    const rows = async () => ({
      attempts: (await o.stack.db.query('SELECT id, llm, description FROM attempts WHERE task_id = $1 ORDER BY id', [taskId])).rows,
      keys: (await o.stack.db.query('SELECT scope, key, attempt_id, request_hash FROM attempt_idempotency_keys WHERE scope = $1', [`task-start:${taskId}`])).rows,
    });
    const before = await rows();
    expect(before.attempts.map((a) => a.id)).toEqual([attemptId]);
    const again = await h.inject('POST', `/api/tasks/${taskId}/start`, { llm: 'single', description: 'another body' }, key);
    expect([again.statusCode, again.json().error]).toEqual([
      422,
      {
        code: 'IDEMPOTENCY_KEY_REUSED',
        message: `The Idempotency-Key was sent before with another body (to start task ${taskId}): a key names one request, so this one was not run. Send it with a new key to start another attempt; a retry of the first request must send the same body.`,
        details: { 'idempotency-key': 'was sent before with another body' },
      },
    ]);
    expect(await rows()).toEqual(before);
    // the first body again, its fields in another order: the first start's answer
    const same = await h.inject('POST', `/api/tasks/${taskId}/start`, { description: 'first body', llm: 'scripted' }, key);
    expect([same.statusCode, same.json().data.attemptId]).toEqual([200, attemptId]);
    expect(await rows()).toEqual(before);
    await h.until(attemptId, ['completed']);
  });
});

describe('a task title that reads as a git option or ref', () => {
  test('reaches git as a commit message only: branch and worktree are named by ids, a squash merge commits the title as written', async () => {
    const h = api(o.stack);
    const project = await h.project();
    const title = `--orphan=x ../../@{-1} HEAD refs/heads/main x.lock. \u200fמשימה\u200f cafe\u0301 ${'🚀'.repeat(150)} -- ends with .lock.`;
    const created = await h.inject('POST', '/api/tasks', { projectId: project.id, title });
    expect(created.statusCode).toBe(201);
    const taskId = created.json().data.id as string;
    expect(created.json().data.title).toBe(title); // stored as sent: the decomposed é stays decomposed
    const { attemptId } = await h.start(taskId);
    const a = await h.until(attemptId, ['completed']);
    expect(a.branch).toBe(`armada/task-${taskId}-attempt-1`);
    expect(path.basename(a.worktreePath as string)).not.toMatch(/orphan|lock|\.\./);
    expect(fs.statSync(a.worktreePath as string).isDirectory()).toBe(true);
    // git's branches: main and the attempt's, nothing named after the title
    expect(gitOut(project.repo, 'for-each-ref', '--format=%(refname)', 'refs/heads').split('\n').sort()).toEqual([`refs/heads/${a.branch}`, 'refs/heads/main']);
    const merged = await h.inject('POST', `/api/attempts/${attemptId}/merge`, { strategy: 'squash' });
    expect(merged.statusCode).toBe(200);
    expect(gitOut(project.repo, 'log', '-1', '--format=%B', 'main')).toBe(title);
    expect(gitOut(project.repo, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
  }, 30_000);
});
