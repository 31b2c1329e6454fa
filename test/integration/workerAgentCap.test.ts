/** `--max-agents`: a worker runs at most N agent processes at once; the others wait (queued) and then run. */
import type { RunningWorkers } from '../../workers/createWorker';
import { startStackWorkers, startTestStack, type TestStack } from '../support/harness';
import { agentConfig, api } from '../support/attemptHelpers';

let stack: TestStack;
let workers: RunningWorkers;
let h: ReturnType<typeof api>;
beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], worker: false, file: agentConfig() });
  workers = await startStackWorkers(stack, { maxAgents: 1 });
  h = api(stack);
});
afterAll(async () => {
  await workers.stop();
  await stack.close();
});

test('with --max-agents 1 two attempts run their agents one after the other', async () => {
  const p = await h.project();
  const [t1, t2] = [await h.task(p.id, 'SLOWEDIT one'), await h.task(p.id, 'SLOWEDIT two')];
  const [a1, a2] = [await h.start(t1), await h.start(t2)];
  await h.until(a1.attemptId, ['completed'], 60_000);
  await h.until(a2.attemptId, ['completed'], 60_000);
  const { rows } = await stack.db.query<{ id: string; started_at: Date; finished_at: Date }>(
    'SELECT id, started_at, finished_at FROM processes WHERE id = ANY($1) ORDER BY started_at',
    [[a1.processId, a2.processId]],
  );
  expect(rows).toHaveLength(2);
  const [first, second] = rows as [(typeof rows)[0], (typeof rows)[0]];
  // each agent runs ~3 s: run together, the second would start ~3 s before the first finished. The first's
  // finished_at is written after its slot is released, so under load the second may start a little before it.
  expect(second.started_at.getTime()).toBeGreaterThanOrEqual(first.finished_at.getTime() - 1000);
  const waited = await stack.db.query('SELECT 1 FROM process_logs WHERE process_id = $1 AND message LIKE $2', [second.id, 'waiting for a free agent slot on this worker%']);
  expect(waited.rowCount).toBe(1);
}, 90_000);
