/**
 * Deleting a workflow while it runs: its running executions are stopped (their scripts killed, their Temporal runs
 * closed), a run still starting sends nothing once the deletion committed, a run requested meanwhile is a 404 that
 * starts nothing, and a run that still ends later writes nothing for a new workflow that reuses the name.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildSchedulerApp } from '../../api/scheduler/app';
import { createPool, sessionLimits } from '../../lib/db/pool';
import type { Faults } from '../../lib/faults';
import { groupAlive } from '../../lib/process/processGroup';
import { FAKE_FLOWS } from '../support/fakeFlowBuilder';
import { createTemporalHandle } from '../../lib/temporal/client';
import { env, eventually, logger, startStackWorkers, TEST_API_KEY } from '../support/harness';
import { startTcpProxy } from '../support/tcpProxy';
import type { RunningWorkers } from '../../workers/createWorker';
import { runWorkflowToEnd, schedulerApiWithStartHook, schedulerStackForFile } from '../support/schedulerStack';

/** The worker's fault hooks (lib/faults.ts): a test sets the one it needs; cleared after each test. */
const faults: Faults = {};
const sched = schedulerStackForFile({ faults });
const { inject } = sched;
const uniq = Math.random().toString(36).slice(2, 8);

afterEach(() => {
  for (const k of Object.keys(faults)) delete faults[k as keyof Faults];
});

/** Every execution row of `workflow`, as PostgreSQL holds them. */
const rowsOf = async (workflow: string): Promise<{ id: string; status: string }[]> =>
  (await sched.stack.db.query<{ id: string; status: string }>('SELECT id, status FROM scheduler_executions WHERE workflow = $1', [workflow])).rows;

/** The run requests the fake platform received carrying `input`. */
const runsSent = (input: string) =>
  sched.fake.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/run/${FAKE_FLOWS.summarise.id}` && (r.body as { input_value?: string } | null)?.input_value === input);

/** The file's source on the fake platform (one per address), created on first use, after the test that deletes its own. */
let fileSource: Promise<string> | undefined;
const fakeSource = (): Promise<string> =>
  (fileSource ??= inject('POST', '/api/v1/sources', { name: `src-of-file-${uniq}`, source_type: 'flow-builder', url: sched.fake.url }).then((r) => {
    if (r.statusCode !== 201) throw new Error(`source not created: ${r.statusCode} ${r.body}`);
    return r.json().id as string;
  }));

/** Starts a run of `name` whose first task writes its process group id to `pidFile` and sleeps; returns the run's id and pid. */
async function runSleeper(name: string, pidFile: string): Promise<{ id: string; pid: number }> {
  const run = await inject('POST', `/api/v1/workflows/${name}/run`);
  expect(run.statusCode).toBe(200);
  const pid = await eventually(async () => fs.existsSync(pidFile) && Number(fs.readFileSync(pidFile, 'utf8').trim()), 15_000, 50);
  expect(groupAlive(pid)).toBe(true);
  return { id: run.json().executionId, pid };
}

describe('deleting a workflow that is running', () => {
  test('DELETE stops the running execution (script gone, Temporal run closed) and the re-created workflow gets no row from it', async () => {
    const name = `del-${uniq}`;
    const pidFile = path.join(sched.tmp, 'del.pid');
    const tasks = [
      { name: 'sleep', type: 'script', script: `echo $$ > ${pidFile}; sleep 30` },
      { name: 'after', type: 'script', script: 'echo after' },
    ];
    expect((await inject('POST', '/api/v1/workflows', { name, tasks })).statusCode).toBe(201);
    const { id, pid } = await runSleeper(name, pidFile);

    const t0 = Date.now();
    const del = await inject('DELETE', `/api/v1/workflows/${name}`);
    expect([del.statusCode, del.json()]).toEqual([200, { name, deleted: true }]);
    await eventually(async () => !groupAlive(pid), 5000, 50);
    const run = (await sched.stack.temporal.client()).workflow.getHandle(`execution:${id}`);
    const closed = await eventually(async () => {
      const status = (await run.describe()).status.name;
      return status !== 'RUNNING' && status;
    }, 5000, 50);
    expect(closed).toBe('CANCELLED');
    expect(Date.now() - t0).toBeLessThan(8000);
    expect((await inject('GET', `/api/v1/executions/${id}`)).statusCode).toBe(404);

    // the name is free again; nothing of the old run shows up under it
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'new', type: 'script', script: 'true' }] })).statusCode).toBe(201);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await rowsOf(name)).toEqual([]);
    expect((await inject('GET', `/api/v1/executions?workflow=${name}`)).json().executions).toEqual([]);
  });

  test('a run whose workflow row went without it being stopped writes nothing for a workflow re-created with that name', async () => {
    const name = `gone-${uniq}`;
    const pidFile = path.join(sched.tmp, 'gone.pid');
    const go = path.join(sched.tmp, 'gone.go');
    const tasks = [
      { name: 'wait', type: 'script', script: `echo $$ > ${pidFile}; while [ ! -f ${go} ]; do sleep 0.1; done; echo finished` },
      { name: 'second', type: 'script', script: 'echo second' },
    ];
    expect((await inject('POST', '/api/v1/workflows', { name, tasks })).statusCode).toBe(201);
    const { id } = await runSleeper(name, pidFile);
    // the row goes under the run (as an older Armada's DELETE left it, or a deletion that could not reach the run)
    await sched.stack.db.query('DELETE FROM scheduler_workflows WHERE name = $1', [name]);
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'other', type: 'script', script: 'true' }] })).statusCode).toBe(201);

    fs.writeFileSync(go, '');
    // the old run goes on to its end, writing its progress as it goes
    await (await sched.stack.temporal.client()).workflow.getHandle(`execution:${id}`).result();
    expect(await rowsOf(name)).toEqual([]);
    expect((await sched.stack.db.query('SELECT count(*)::int AS n FROM scheduler_execution_logs WHERE execution_id = $1', [id])).rows[0].n).toBe(0);
    expect((await inject('GET', `/api/v1/executions/${id}`)).statusCode).toBe(404);
  });

  test('deleting a source stops the running executions of the workflows it removes', async () => {
    const src = (await inject('POST', '/api/v1/sources', { name: `src-${uniq}`, source_type: 'flow-builder', url: sched.fake.url })).json();
    const name = `via-src-${uniq}`;
    const pidFile = path.join(sched.tmp, 'src.pid');
    const tasks = [
      { name: 'sleep', type: 'script', script: `echo $$ > ${pidFile}; sleep 30` },
      { name: 'flow', type: 'flow', source: src.id, flow: 'Summarise' },
    ];
    expect((await inject('POST', '/api/v1/workflows', { name, tasks })).statusCode).toBe(201);
    const { id, pid } = await runSleeper(name, pidFile);
    const del = await inject('DELETE', `/api/v1/sources/${src.id}`);
    expect([del.statusCode, del.json()]).toEqual([200, { id: src.id, deleted: true, deleted_workflows: [name] }]);
    await eventually(async () => !groupAlive(pid), 5000, 50);
    const run = (await sched.stack.temporal.client()).workflow.getHandle(`execution:${id}`);
    expect(await eventually(async () => (await run.describe()).status.name !== 'RUNNING' && (await run.describe()).status.name, 5000, 50)).toBe('CANCELLED');
  });
});

describe('deleting a workflow while a run of it starts', () => {
  let sourceId: string;
  beforeAll(async () => {
    sourceId = await fakeSource();
  });

  /** Whether the workflow's row is gone: the deletion committed. */
  const deleted = async (name: string) => (await sched.stack.db.query('SELECT 1 FROM scheduler_workflows WHERE name = $1', [name])).rowCount === 0;

  test.each(['schedule', 'manual'] as const)(
    'a %s run that read its definition before the deletion committed sends nothing to the platform and writes nothing',
    async (trigger) => {
      const name = `starting-${trigger}-${uniq}`;
      const input = `input-${trigger}-${uniq}`;
      expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'flow', type: 'flow', source: sourceId, flow: 'Summarise', input }] })).statusCode).toBe(201);
      // beginRun has the definition in hand; right then the workflow is deleted through the API, and the run goes on
      // only once that deletion has committed (it may still be waiting for the run to close: not awaited here)
      let deletion: ReturnType<typeof inject> | undefined;
      let runId: string | undefined;
      faults['beginRun.afterDefinition'] = async (info) => {
        if (info.workflow !== name || deletion) return;
        runId = info.temporalWorkflowId as string;
        deletion = inject('DELETE', `/api/v1/workflows/${name}`);
        await eventually(() => deleted(name), 10_000, 20);
      };
      if (trigger === 'schedule') {
        expect((await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: 'now' })).statusCode).toBe(201);
      } else {
        expect((await inject('POST', `/api/v1/workflows/${name}/run`)).statusCode).toBe(200);
      }
      const id = await eventually(async () => runId, 15_000, 20);
      const run = (await sched.stack.temporal.client()).workflow.getHandle(id);
      const result = await run.result().catch((err: Error) => err.name);
      const del = await (deletion as ReturnType<typeof inject>);
      expect([del.statusCode, del.json()]).toEqual([200, { name, deleted: true }]);

      expect(runsSent(input)).toEqual([]); // the platform never heard of the deleted workflow's run
      expect(await rowsOf(name)).toEqual([]);
      // closed in Temporal: a scheduled run (no row, so the deletion did not know it) ends at once "deleted"; the
      // manual run, which the deletion listed and cancelled, ends cancelled or "deleted", whichever came first
      const status = (await run.describe()).status.name;
      if (trigger === 'schedule') expect([status, result]).toEqual(['COMPLETED', 'deleted']);
      else expect(['COMPLETED', 'CANCELLED']).toContain(status);
    },
  );

  test.each(['schedule', 'manual'] as const)(
    'a %s run whose workflow is deleted and re-created under its name right after it read its definition writes nothing under the new workflow and sends nothing',
    async (trigger) => {
      const name = `recreated-${trigger}-${uniq}`;
      const oldInput = `old-${trigger}-${uniq}`;
      const newInput = `new-${trigger}-${uniq}`;
      const tasks = (input: string) => [{ name: 'flow', type: 'flow', source: sourceId, flow: 'Summarise', input }];
      expect((await inject('POST', '/api/v1/workflows', { name, tasks: tasks(oldInput) })).statusCode).toBe(201);
      // beginRun holds the old workflow's definition; right then the workflow is deleted through the API and, once
      // that committed, created again under the same name; then the run goes on to write its start
      let deletion: ReturnType<typeof inject> | undefined;
      let recreated: number | undefined;
      let runId: string | undefined;
      faults['beginRun.afterDefinition'] = async (info) => {
        if (info.workflow !== name || deletion) return;
        runId = info.temporalWorkflowId as string;
        deletion = inject('DELETE', `/api/v1/workflows/${name}`);
        await eventually(() => deleted(name), 10_000, 20);
        recreated = (await inject('POST', '/api/v1/workflows', { name, tasks: tasks(newInput) })).statusCode;
      };
      if (trigger === 'schedule') {
        expect((await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: 'now' })).statusCode).toBe(201);
      } else {
        expect((await inject('POST', `/api/v1/workflows/${name}/run`)).statusCode).toBe(200);
      }
      const id = await eventually(async () => runId, 15_000, 20);
      const run = (await sched.stack.temporal.client()).workflow.getHandle(id);
      const result = await run.result().catch((err: Error) => err.name);
      const del = await (deletion as ReturnType<typeof inject>);
      expect([del.statusCode, del.json()]).toEqual([200, { name, deleted: true }]);
      expect(recreated).toBe(201);

      // the new workflow of that name shows nothing of the old run, and the platform heard of neither input
      expect(await rowsOf(name)).toEqual([]);
      expect((await inject('GET', `/api/v1/executions?workflow=${name}`)).json().executions).toEqual([]);
      expect(runsSent(oldInput)).toEqual([]);
      expect(runsSent(newInput)).toEqual([]);
      const status = (await run.describe()).status.name;
      if (trigger === 'schedule') expect([status, result]).toEqual(['COMPLETED', 'deleted']);
      else expect(['COMPLETED', 'CANCELLED']).toContain(status);
    },
  );
});

describe('a manual run whose row was written just before its workflow was deleted', () => {
  let sourceId: string;
  beforeAll(async () => {
    sourceId = await fakeSource();
  });

  test.each([
    ['POST /workflows/{name}/run', 'deleted', 'Workflow not found'],
    ['POST /workflows/{name}/run', 'deleted and re-created', 'Workflow not found'],
    ['POST /executions/{id}/retry', 'deleted and re-created', 'Execution not found'],
  ] as const)('%s, its workflow %s before the run started in Temporal: 404 %s, and the run sends and writes nothing', async (route, what, detail) => {
    const retry = route.includes('retry');
    const name = `written-${retry ? 'retry' : 'run'}-${what === 'deleted' ? 'gone' : 'again'}-${uniq}`;
    const oldInput = `old-${name}`;
    const newInput = `new-${name}`;
    const tasks = (input: string) => [{ name: 'flow', type: 'flow', source: sourceId, flow: 'Summarise', input }];
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: tasks(oldInput) })).statusCode).toBe(201);
    const original = retry ? (await runWorkflowToEnd(sched.stack, name)).id : undefined;
    const sentBefore = runsSent(oldInput).length;

    // The interleaving: the request has written its execution row and is about to start the Temporal run; right then
    // the workflow is deleted (the deletion lists the row, finds no run to stop yet, and commits) and maybe created
    // again under its name; then the start goes on.
    let reached: (workflowId: string) => void = () => undefined;
    const atStart = new Promise<string>((resolve) => {
      reached = resolve;
    });
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const api = await schedulerApiWithStartHook(sched.stack, async (workflowId) => {
      reached(workflowId);
      await gate;
    });
    let answer: Awaited<ReturnType<typeof inject>>;
    let started: string;
    try {
      const request = api.inject('POST', retry ? `/api/v1/executions/${original}/retry` : `/api/v1/workflows/${name}/run`);
      started = await atStart;
      expect(await rowsOf(name)).toContainEqual({ id: started.replace(/^execution:/, ''), status: 'running' });
      const del = await inject('DELETE', `/api/v1/workflows/${name}`);
      expect([del.statusCode, del.json()]).toEqual([200, { name, deleted: true }]);
      if (what !== 'deleted') expect((await inject('POST', '/api/v1/workflows', { name, tasks: tasks(newInput) })).statusCode).toBe(201);
      release();
      answer = await request;
    } finally {
      release();
      await api.close();
    }
    // the client is told the workflow is gone (before: 200 with an execution id whose GET was a 404 for ever)
    expect([answer.statusCode, answer.json()]).toEqual([404, { detail }]);

    // the run that was started ends at once without a task: no row (under the old or a new workflow), no request
    const run = (await sched.stack.temporal.client()).workflow.getHandle(started);
    expect(await run.result()).toBe('deleted');
    expect(await rowsOf(name)).toEqual([]);
    expect(runsSent(oldInput)).toHaveLength(sentBefore);
    expect(runsSent(newInput)).toEqual([]);
  });
});

describe('a run requested while its workflow is being deleted', () => {
  /** Waits until a connection of the test's database waits for a lock in a statement that starts with `sql`. */
  const waitsForLock = (sql: string) =>
    eventually(
      async () =>
        ((await sched.stack.db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`, [`${sql}%`])).rowCount ?? 0) > 0,
      10_000,
      20,
    );

  test.each([
    ['POST /workflows/{name}/run', 'Workflow not found'],
    ['POST /executions/{id}/retry', 'Execution not found'],
  ] as const)('%s that found the workflow, then lost it to a deletion before its row was written: 404 %s, nothing started', async (route, detail) => {
    const name = `racing-${route.includes('retry') ? 'retry' : 'run'}-${uniq}`;
    const marker = path.join(sched.tmp, `${name}.ran`);
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'mark', type: 'script', script: `touch ${marker}` }] })).statusCode).toBe(201);
    const original = route.includes('retry') ? (await runWorkflowToEnd(sched.stack, name)).id : undefined;
    fs.rmSync(marker, { force: true });

    // The interleaving, forced with the workflow row's lock: a transaction of the test holds it; the deletion queues
    // for it; the run request finds the workflow and queues behind the deletion to insert its row. When the test lets
    // go, the deletion takes the lock first and commits, and the row's insert finds the workflow gone.
    const holder = await sched.stack.db.connect();
    let answers: Awaited<ReturnType<typeof inject>>[];
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM scheduler_workflows WHERE name = $1 FOR UPDATE', [name]);
      const deletion = inject('DELETE', `/api/v1/workflows/${name}`);
      await waitsForLock('SELECT name FROM scheduler_workflows'); // lockWorkflows
      const run = original ? inject('POST', `/api/v1/executions/${original}/retry`) : inject('POST', `/api/v1/workflows/${name}/run`);
      await waitsForLock('INSERT INTO scheduler_executions'); // insertManualExecution, behind the deletion
      await holder.query('ROLLBACK');
      answers = await Promise.all([deletion, run]);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    const [del, run] = answers;
    expect([del?.statusCode, del?.json()]).toEqual([200, { name, deleted: true }]);
    expect([run?.statusCode, run?.json()]).toEqual([404, { detail }]);

    // no orphan: no row, and no Temporal run of the workflow besides the original's (none that could start later)
    expect(await rowsOf(name)).toEqual([]);
    const client = await sched.stack.temporal.client();
    await new Promise((r) => setTimeout(r, 1000));
    const runs: string[] = [];
    for await (const w of client.workflow.list({ query: `ArmadaWorkflow = "${name}"` })) runs.push(w.workflowId);
    expect(runs).toEqual(original ? [`execution:${original}`] : []);
    expect(fs.existsSync(marker)).toBe(false);
  });

  test('a run that starts after the deletion found none running and before it locked the workflow: the deletion is made again, with Temporal, and stops it', async () => {
    const name = `late-run-${uniq}`;
    const pidFile = path.join(sched.tmp, `${name}.pid`);
    // no schedule and no running execution: the deletion's first look finds nothing it needs Temporal for
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'sleep', type: 'script', script: `echo $$ > ${pidFile}; sleep 30` }] })).statusCode).toBe(201);

    // The interleaving, forced with the workflow row's lock: a transaction of the test holds it FOR SHARE; the
    // deletion, past its look for running executions, queues for it (lockWorkflows, FOR UPDATE); a run starts
    // meanwhile (its row's writes lock the workflow's row FOR KEY SHARE, which a share lock lets through) and its
    // script runs. When the test lets go, the deletion finds that run under its lock with no Temporal client had: it
    // ends that transaction having deleted nothing, gets the client, and deletes again (api/scheduler/workflows.ts).
    const holder = await sched.stack.db.connect();
    let del: Awaited<ReturnType<typeof inject>>;
    let run: { id: string; pid: number };
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM scheduler_workflows WHERE name = $1 FOR SHARE', [name]);
      const deletion = inject('DELETE', `/api/v1/workflows/${name}`);
      await waitsForLock('SELECT name FROM scheduler_workflows'); // lockWorkflows
      run = await runSleeper(name, pidFile);
      expect(await rowsOf(name)).toEqual([{ id: run.id, status: 'running' }]);
      await holder.query('COMMIT');
      del = await deletion;
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    expect([del.statusCode, del.json()]).toEqual([200, { name, deleted: true }]);

    // stopped like any running execution of a deleted workflow: script killed, Temporal run cancelled, its row gone
    await eventually(async () => !groupAlive(run.pid), 5000, 50);
    const handle = (await sched.stack.temporal.client()).workflow.getHandle(`execution:${run.id}`);
    expect(await eventually(async () => (await handle.describe()).status.name !== 'RUNNING' && (await handle.describe()).status.name, 5000, 50)).toBe('CANCELLED');
    expect(await rowsOf(name)).toEqual([]);
    expect((await inject('GET', `/api/v1/executions/${run.id}`)).statusCode).toBe(404);
    expect((await inject('GET', `/api/v1/workflows/${name}`)).statusCode).toBe(404);
  });
});

describe('a scheduled run that waited for a worker while its workflow was deleted and re-created', () => {
  let workers: RunningWorkers | undefined;
  afterAll(async () => {
    await workers?.stop();
  });

  test('it reads the new workflow of that name when it begins, and ends "deleted" without writing or sending anything', async () => {
    const sourceId = await fakeSource();
    const name = `queued-${uniq}`;
    const oldInput = `old-${name}`;
    const newInput = `new-${name}`;
    const tasks = (input: string) => [{ name: 'flow', type: 'flow', source: sourceId, flow: 'Summarise', input }];
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: tasks(oldInput) })).statusCode).toBe(201);

    // no worker takes the run the schedule fires: it waits in the task queue while the workflow goes and comes back
    await sched.stack.workers?.stop();
    const schedule = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: 'now' });
    expect(schedule.statusCode).toBe(201);
    const client = await sched.stack.temporal.client();
    const fired = await eventually(async () => {
      const d = await client.schedule.getHandle(`schedule:${name}:${schedule.json().id}`).describe();
      return d.info.recentActions[0]?.action.workflow.workflowId;
    }, 15_000, 100);
    expect((await inject('DELETE', `/api/v1/workflows/${name}`)).statusCode).toBe(200);
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: tasks(newInput) })).statusCode).toBe(201);

    workers = await startStackWorkers(sched.stack, { faults });
    expect(await client.workflow.getHandle(fired).result()).toBe('deleted');
    expect(await rowsOf(name)).toEqual([]);
    expect(runsSent(oldInput)).toEqual([]);
    expect(runsSent(newInput)).toEqual([]);
  });
});

describe('deleting a workflow with a running execution while Temporal cannot be reached', () => {
  /**
   * An API whose Temporal client has not connected yet, in front of a Temporal that takes the connection and holds its
   * answers (a TCP proxy, `holdAnswers`): getting the client waits for its connect timeout (3 s). It is got before the
   * deletion's transaction, so the wait holds nothing: no session of the API idle in transaction, the workflow's row
   * free; then 503, nothing deleted; once Temporal answers, the deletion goes through. Before, the client was got inside
   * the transaction, with the workflow's row locked for the whole wait.
   */
  test('the wait for Temporal holds no transaction and no lock; 503, nothing deleted; sent again once Temporal answers, deleted', async () => {
    const name = `del-unreached-${uniq}`;
    expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
    await sched.stack.db.query(
      `INSERT INTO scheduler_executions (id, workflow, workflow_id, temporal_workflow_id, trigger, status, started_at)
       SELECT gen_random_uuid(), name, id, 'execution:unreached-' || id, 'manual', 'running', now() FROM scheduler_workflows WHERE name = $1`,
      [name],
    );
    const proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'), 'holdAnswers');
    const proxied = createTemporalHandle(proxy.address, sched.stack.config.temporal.namespace);
    const apiPool = createPool(sched.stack.dbUrl, logger, { max: 5, application_name: 'sched-delete-unreached', ...sessionLimits(sched.stack.config.apiDatabaseLimits) });
    const app = await buildSchedulerApp({ db: apiPool, config: sched.stack.config, keys: sched.stack.keys, temporal: proxied, logger, metrics: sched.stack.metrics });
    try {
      await app.ready();
      const del = () => app.inject({ method: 'DELETE', url: `/api/v1/workflows/${name}`, headers: { 'x-api-key': TEST_API_KEY } });
      let answered = false;
      const answer = del().finally(() => (answered = true));
      const seen: string[] = [];
      while (!answered) {
        const idle = await sched.stack.db.query("SELECT query FROM pg_stat_activity WHERE application_name = 'sched-delete-unreached' AND state LIKE 'idle in transaction%'");
        for (const r of idle.rows) seen.push(`idle in transaction: ${r.query}`);
        const c = await sched.stack.db.connect();
        try {
          await c.query('BEGIN');
          await c.query('SELECT 1 FROM scheduler_workflows WHERE name = $1 FOR UPDATE NOWAIT', [name]);
        } catch (err) {
          seen.push(`workflow row locked: ${(err as Error).message}`);
        } finally {
          await c.query('ROLLBACK').catch(() => undefined);
          c.release();
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      const r = await answer;
      expect(seen).toEqual([]);
      expect([r.statusCode, r.json()]).toEqual([503, { detail: 'Error stopping executions: Temporal is unavailable' }]);
      expect((await sched.stack.db.query('SELECT 1 FROM scheduler_workflows WHERE name = $1', [name])).rowCount).toBe(1);

      proxy.setMode('forward');
      const again = await del();
      expect([again.statusCode, again.json()]).toEqual([200, { name, deleted: true }]);
      expect((await sched.stack.db.query('SELECT 1 FROM scheduler_workflows WHERE name = $1', [name])).rowCount).toBe(0);
    } finally {
      proxy.setMode('forward');
      await app.close();
      await proxied.close();
      await proxy.close();
      await apiPool.end();
    }
  });
});
