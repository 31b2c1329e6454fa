/**
 * Runs whose task runs out of its `timeout` (docs/scheduler.md, "Tasks"): a script that sleeps past its 1 s, with a
 * child of its own and SIGTERM ignored (the worker must get to SIGKILL), and a flow whose platform (a loopback fake)
 * never answers. Checked: the execution ends `failed` with the timeout in its error and its log, nothing of the
 * script's process group is left, its temp dir is gone, and the next manual run of the same workflow works.
 */
import fs from 'node:fs';
import path from 'node:path';
import { groupAlive } from '../../lib/process/processGroup';
import { processAlive } from '../../lib/process/procStat';
import { FAKE_FLOWS } from '../support/fakeFlowBuilder';
import { eventually } from '../support/harness';
import { schedulerStackForFile } from '../support/schedulerStack';

jest.setTimeout(120_000);

const sched = schedulerStackForFile();
const uniq = Math.random().toString(36).slice(2, 8);

interface Execution {
  status: string;
  error: string | null;
  tasks: { name: string; status: string; error: string | null; output: string }[];
}

async function runToEnd(workflow: string): Promise<{ id: string; execution: Execution; logs: { level: string; message: string }[] }> {
  const run = await sched.inject('POST', `/api/v1/workflows/${workflow}/run`);
  expect(run.statusCode).toBe(200);
  const id = run.json().executionId as string;
  const execution = await eventually(async () => {
    const e = (await sched.inject('GET', `/api/v1/executions/${id}`)).json();
    return e.status !== 'running' && (e as Execution);
  }, 60_000);
  return { id, execution, logs: (await sched.inject('GET', `/api/v1/executions/${id}/logs`)).json().logs };
}

test('a script sleeping past its 1 s timeout, ignoring SIGTERM, with a child: failed "timed out after 1s", its group gone, its dir removed; the next run completes', async () => {
  const dir = path.join(sched.tmp, 'script');
  fs.mkdirSync(dir);
  const fast = path.join(dir, 'fast');
  // the flag file makes the next run a quick one; otherwise: SIGTERM ignored (by its children too), a child of its own
  const script = [
    `if [ -e ${fast} ]; then echo quick; exit 0; fi`,
    `pwd > ${path.join(dir, 'cwd')}`,
    `echo $$ > ${path.join(dir, 'leader')}`,
    "trap '' TERM",
    `sleep 300 & echo $! > ${path.join(dir, 'child')}`,
    'echo going to sleep',
    'sleep 300',
  ].join('\n');
  const name = `script-timeout-${uniq}`;
  expect((await sched.inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'slow', type: 'script', script, timeout: 1 }, { name: 'after', type: 'script', script: 'echo after' }] })).statusCode).toBe(201);

  const t0 = Date.now();
  const { execution, logs } = await runToEnd(name);
  expect(execution).toMatchObject({ status: 'failed', error: 'Task slow failed: timed out after 1s' });
  expect(execution.tasks.map((t) => [t.name, t.status])).toEqual([
    ['slow', 'failed'],
    ['after', 'skipped'],
  ]);
  expect(execution.tasks[0]?.error).toBe('timed out after 1s');
  expect(execution.tasks[0]?.output).toBe('going to sleep\n');
  expect(logs.filter((l) => l.message === 'Task slow failed: timed out after 1s').map((l) => l.level)).toEqual(['error']);
  // the 1 s, then SIGTERM (ignored) and SIGKILL 2 s later: not the 300 s of its sleeps
  expect(Date.now() - t0).toBeLessThan(60_000);

  const leader = Number(fs.readFileSync(path.join(dir, 'leader'), 'utf8'));
  const child = Number(fs.readFileSync(path.join(dir, 'child'), 'utf8'));
  // nothing of its group is left (a SIGKILL takes effect at the process's next scheduling: a moment's grace)
  await eventually(async () => !groupAlive(leader) && !processAlive(child), 5000, 100);
  expect(fs.existsSync(fs.readFileSync(path.join(dir, 'cwd'), 'utf8').trim())).toBe(false);

  fs.writeFileSync(fast, '');
  const next = await runToEnd(name);
  expect(next.execution).toMatchObject({ status: 'completed', error: null });
  expect(next.execution.tasks.map((t) => [t.name, t.status, t.output])).toEqual([
    ['slow', 'completed', 'quick\n'],
    ['after', 'completed', 'after\n'],
  ]);
});

test('a flow whose platform never answers, with a 1 s timeout: failed with the timeout, sent once; the next run, answered, completes', async () => {
  const src = (await sched.inject('POST', '/api/v1/sources', { name: `fb-timeout-${uniq}`, source_type: 'flow-builder', url: sched.fake.url, api_key: 'flow-key' })).json();
  const name = `flow-timeout-${uniq}`;
  expect(
    (await sched.inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'ask', type: 'flow', source: src.id, flow: 'Summarise', input: 'hi', timeout: 1 }] })).statusCode,
  ).toBe(201);
  const runs = () => sched.fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}`).length;

  sched.fake.runDelayMs = 3_600_000; // held for good: the answer never comes while the test runs
  try {
    const before = runs();
    const { execution, logs } = await runToEnd(name);
    const expected = `Task ask failed: POST /api/v1/run/${FAKE_FLOWS.summarise.id} timed out after 1000 ms`;
    expect(execution).toMatchObject({ status: 'failed', error: expected });
    expect(execution.tasks[0]).toMatchObject({ status: 'failed', error: `POST /api/v1/run/${FAKE_FLOWS.summarise.id} timed out after 1000 ms` });
    expect(logs.filter((l) => l.message === expected).map((l) => l.level)).toEqual(['error']);
    // the platform got it and may be running it: a timed-out flow is never sent again
    await new Promise((r) => setTimeout(r, 3000));
    expect(runs() - before).toBe(1);
  } finally {
    sched.fake.runDelayMs = 0;
  }

  const next = await runToEnd(name);
  expect(next.execution).toMatchObject({ status: 'completed', error: null });
  expect(next.execution.tasks[0]?.output).toContain('ran Summarise with hi');
});
