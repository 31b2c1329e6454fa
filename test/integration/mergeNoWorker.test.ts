/**
 * A merge while no worker runs (docs/attempts.md, merge): its workflow is started, but only a worker runs it. The
 * route waits at most `attempts.mergeWaitMs` (2 s here), then answers 503 with `details.outcome: "unknown"`; a merge
 * sent meanwhile is the 409 "already running"; the merge lands, once, when the worker comes, and a merge after it is
 * the 409 "already merged". Real Temporal; the worker is stopped and started.
 *
 * Before (session 48): with no worker, POST /api/attempts/:id/merge waited with no bound, until a worker came.
 */
import type { RunningWorkers } from '../../workers/createWorker';
import { agentConfig, api, gitOut } from '../support/attemptHelpers';
import { eventually, startStackWorkers, startTestStack, type TestStack } from '../support/harness';

jest.setTimeout(120_000);

const WAIT_MS = 2000;

let stack: TestStack;
let workers: RunningWorkers | undefined;
let h: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: true, file: agentConfig({ attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000, mergeWaitMs: WAIT_MS } }) });
  workers = stack.workers;
  h = api(stack);
}, 120_000);
afterAll(async () => {
  if (workers !== stack?.workers) await workers?.stop();
  await stack?.close();
});

test('merge with the worker stopped: 503 with an unknown outcome, a second merge meanwhile 409; it lands once when the worker comes; then 409 already merged', async () => {
  const { repo, attemptId } = await h.finishedAttempt('Merge without a worker');
  const before = gitOut(repo, 'rev-parse', 'main');
  await workers?.stop();
  workers = undefined;

  const first = await h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
  expect([first.statusCode, first.headers['retry-after'], first.json().error]).toEqual([
    503,
    '1',
    {
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringMatching(new RegExp(`^No worker finished the merge of attempt ${attemptId} within 2 s .*may or may not have been applied`)),
      details: { outcome: 'unknown', waitedMs: WAIT_MS },
    },
  ]);
  const again = await h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
  expect([again.statusCode, again.json().error]).toEqual([409, { code: 'CONFLICT', message: `A merge of attempt ${attemptId} is already running` }]);
  expect([gitOut(repo, 'rev-parse', 'main'), (await h.attempt(attemptId)).merged]).toEqual([before, false]);

  workers = await startStackWorkers(stack);
  // what the 503 said might happen does: the merge lands, once
  const merged = await eventually(async () => {
    const a = await h.attempt(attemptId);
    return a.merged ? a : undefined;
  }, 60_000, 250);
  expect(merged.mergedAt).toEqual(expect.any(String));
  const head = gitOut(repo, 'rev-parse', 'main');
  expect(head).not.toBe(before);
  expect(gitOut(repo, 'rev-list', '--count', `${before}..${head}`, '--first-parent')).toBe('1');
  const late = await h.inject('POST', `/api/attempts/${attemptId}/merge`, {});
  expect([late.statusCode, late.json().error.message]).toEqual([409, `Attempt ${attemptId} was already merged`]);
  expect(gitOut(repo, 'rev-parse', 'main')).toBe(head);
});
