/**
 * A request whose change the worker makes and that waits for it (an approval response: a Temporal update whose
 * activity writes PostgreSQL) when PostgreSQL is called down meanwhile: answered 503 at once, saying the outcome is
 * unknown, instead of waiting as long as the outage lasts (api/http/workerWait.ts). The worker's write is held here by
 * a row lock; the API is told PostgreSQL is down as its probes would tell it. Once the lock goes, the worker records
 * the response: the 503 said it might be applied.
 *
 * Before: the chaos soak saw an approval response answered 200 after 9.5 s and a merge after 11 s across a PostgreSQL
 * kill; in a longer outage such a request waited for all of it.
 */
import { createDependencyState } from '../../lib/runtime/dependencies';
import { createProjectAndTask, insertAttempt } from '../support/attempts';
import { logger, startTestStack, eventually, type TestStack } from '../support/harness';

let stack: TestStack;
let taskId: string;
const dependencies = createDependencyState(logger);
const A = 'alice@example.com';

const inject = (method: 'GET' | 'POST', url: string, user?: string, payload?: unknown) =>
  stack.app('task').inject({ method, url, payload: payload as object, headers: user ? { 'x-user-email': user } : {} });

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, dependencies });
  ({ taskId } = await createProjectAndTask(stack));
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

test('an approval response waiting on the worker when PostgreSQL is called down: 503 with an unknown outcome at once; recorded once PostgreSQL answers', async () => {
  const attemptId = await insertAttempt(stack, taskId);
  const created = await inject('POST', '/api/approvals', 'carol@example.com', { taskAttemptId: attemptId, type: 'merge', title: 'Merge it?', approvers: [A] });
  expect(created.statusCode).toBe(201);
  const id = created.json().data.id as string;

  // the worker's write of the response waits behind this lock, as it would wait for a PostgreSQL that is away
  const locker = await stack.db.connect();
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM approvals WHERE id = $1 FOR UPDATE', [id]);
  try {
    const answer = inject('POST', `/api/approvals/${id}/respond`, A, { decision: 'approved', comment: 'ok' });
    await new Promise((r) => setTimeout(r, 1500));
    const downAt = Date.now();
    dependencies.markDown('postgres', 'the test says so');
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([answer, new Promise<'none'>((resolve) => (timer = setTimeout(() => resolve('none'), 10_000)))]);
    clearTimeout(timer);
    expect(r === 'none' ? 'no answer within 10 s of PostgreSQL called down' : { status: r.statusCode, within2s: Date.now() - downAt < 2000 }).toEqual({ status: 503, within2s: true });
    if (r === 'none') return;
    expect(r.headers['retry-after']).toBe('1');
    expect(r.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/may or may not have been applied/), details: { outcome: 'unknown' } } });
  } finally {
    dependencies.markUp('postgres');
    await locker.query('ROLLBACK');
    locker.release();
  }
  // the worker goes on once it can write: the response is recorded, once
  await eventually(async () => (await inject('GET', `/api/approvals/${id}`)).json().data.status === 'approved', 30_000, 250);
  const detail = (await inject('GET', `/api/approvals/${id}`)).json().data;
  expect(detail.responses).toEqual([expect.objectContaining({ approver: A, decision: 'approved' })]);
});
