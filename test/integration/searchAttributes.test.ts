/**
 * Armada's Temporal search attributes: an attempt's workflow carries its task, project, attempt and agent from the
 * start and its latest outcome in ArmadaAttemptStatus, so `temporal workflow list --query 'ArmadaAttemptStatus="failed"
 * AND ArmadaTaskId="<id>"'` finds a failed attempt (through the client and the real CLI); a namespace without the
 * attributes stops `armada worker` and `armada api` with one line naming them and the command that creates them.
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import { Connection, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time';
import { resolveTemporalCli, startTemporalDevServer, waitForTemporal } from '../../lib/runtime/temporalDevServer';
import { missingSearchAttributes, registerSearchAttributes, SearchAttributesMissing } from '../../lib/temporal/searchAttributeCheck';
import { ARMADA_SEARCH_ATTRIBUTES, ArmadaAgent, ArmadaAttemptId, ArmadaAttemptStatus, ArmadaProjectId, ArmadaTaskId, ArmadaWorkflow } from '../../lib/temporal/searchAttributes';
import { startWorkers } from '../../workers/createWorker';
import { ARMADA_BIN } from '../support/armadaProcess';
import { agentConfig, api, recordHistory } from '../support/attemptHelpers';
import { env, eventually, logger, startTestStack, ensureTemporalRuntime, type TestStack } from '../support/harness';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };
const run = promisify(execFile);
const temporalCli = () => resolveTemporalCli(process.env.TEMPORAL_CLI_PATH || 'temporal', process.env.ARMADA_TOOLS_DIR || os.tmpdir(), () => undefined);
const NAMES = ARMADA_SEARCH_ATTRIBUTES.map((k) => k.name);

let stack: TestStack;
let h: ReturnType<typeof api>;
let client: Client;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task', 'scheduler'], worker: true, file: agentConfig({ scheduler: { healthCheckIntervalSeconds: 0 } }) });
  h = api(stack);
  client = await stack.temporal.client();
});
afterAll(async () => {
  await stack.close();
});

/** Visibility is eventually consistent: the list is read until it has `n` entries. */
async function listUntil(query: string, n = 1): Promise<WorkflowExecutionInfo[]> {
  return eventually(async () => {
    const found: WorkflowExecutionInfo[] = [];
    for await (const w of client.workflow.list({ query })) found.push(w);
    return found.length === n ? found : undefined;
  }, 20_000, 250);
}

describe('search attributes', () => {
  test('the test dev server (armada infra, as armada start) has all six as Keyword', async () => {
    expect(await missingSearchAttributes(client.connection, stack.config.temporal.namespace)).toEqual([]);
  });

  test('a failed attempt: ArmadaAttemptStatus="failed" AND ArmadaTaskId finds it through the client and the temporal CLI', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Please FAIL');
    const { attemptId } = await h.start(taskId);
    expect((await h.until(attemptId, ['completed', 'failed'])).status).toBe('failed');

    const query = `ArmadaAttemptStatus="failed" AND ArmadaTaskId="${taskId}"`;
    const [found] = await listUntil(query);
    expect(found?.workflowId).toBe(`attempt:${attemptId}`);
    expect(found?.status.name).toBe('RUNNING'); // open for follow-ups: the attribute carries the outcome
    const attrs = found?.typedSearchAttributes;
    expect(attrs?.get(ArmadaTaskId)).toBe(taskId);
    expect(attrs?.get(ArmadaProjectId)).toBe(p.id);
    expect(attrs?.get(ArmadaAttemptId)).toBe(attemptId);
    expect(attrs?.get(ArmadaAgent)).toBe('scripted');
    expect(attrs?.get(ArmadaAttemptStatus)).toBe('failed');

    // exactly the command an operator types, with the real binary against this run's dev server
    const cli = await temporalCli();
    const { stdout } = await run(
      cli,
      ['workflow', 'list', '--address', env('ARMADA_TEST_TEMPORAL_ADDRESS'), '--namespace', stack.config.temporal.namespace, '--query', query, '--output', 'json'],
      { timeout: 30_000 },
    );
    const listed = (JSON.parse(stdout) as { execution: { workflowId: string } }[]).map((w) => w.execution.workflowId);
    expect(listed).toEqual([`attempt:${attemptId}`]);
    await recordHistory(stack, `attempt:${attemptId}`, 'attempt-failed-search-attributes');
  });

  test('a follow-up\'s outcome replaces the earlier one in ArmadaAttemptStatus', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'Please FAIL');
    const { attemptId } = await h.start(taskId);
    await h.until(attemptId, ['failed']);
    await listUntil(`ArmadaAttemptStatus="failed" AND ArmadaAttemptId="${attemptId}"`);
    const r = await h.inject('POST', `/api/attempts/${attemptId}/follow-up`, { prompt: 'now succeed' });
    expect(r.statusCode).toBeLessThan(300);
    // the follow-up prompt has no FAIL in it: the scripted agent completes
    await h.until(attemptId, ['completed']);
    const [found] = await listUntil(`ArmadaAttemptStatus="completed" AND ArmadaAttemptId="${attemptId}"`);
    expect(found?.workflowId).toBe(`attempt:${attemptId}`);
    expect(await listUntil(`ArmadaAttemptStatus="failed" AND ArmadaAttemptId="${attemptId}"`, 0)).toEqual([]);
  });

  test('a cancelled attempt shows ArmadaAttemptStatus="cancelled"', async () => {
    const p = await h.project();
    const taskId = await h.task(p.id, 'SLEEP forever');
    const { attemptId } = await h.start(taskId);
    await listUntil(`ArmadaAttemptStatus="running" AND ArmadaAttemptId="${attemptId}"`);
    expect((await h.inject('POST', `/api/attempts/${attemptId}/cancel`)).statusCode).toBe(200);
    const [found] = await listUntil(`ArmadaAttemptStatus="cancelled" AND ArmadaTaskId="${taskId}"`);
    expect(found?.workflowId).toBe(`attempt:${attemptId}`);
  });

  test('scheduler runs, manual and scheduled, carry ArmadaWorkflow; so does the schedule\'s action', async () => {
    const name = `sa-${crypto.randomBytes(4).toString('hex')}`;
    const sched = (method: 'POST' | 'DELETE', url: string, payload?: unknown) =>
      stack.app('scheduler').inject({ method, url, payload: payload as object, headers: { 'x-api-key': 'test-api-key-0123456789' } });
    const created = await sched('POST', '/api/v1/workflows', { name, schedule: '@every 2s', tasks: [{ name: 'tick', type: 'script', script: 'echo tick' }] });
    expect(created.statusCode).toBe(201);
    try {
      const executionId = (await sched('POST', `/api/v1/workflows/${name}/run`)).json().executionId as string;
      const ids = await eventually(
        async () => {
          const seen: string[] = [];
          for await (const w of client.workflow.list({ query: `ArmadaWorkflow="${name}"` })) seen.push(w.workflowId);
          return seen.includes(`execution:${executionId}`) && seen.some((id) => id.startsWith(`schedule:${name}-`)) ? seen : undefined;
        },
        30_000,
        250,
      );
      expect(ids.every((id) => id === `execution:${executionId}` || id.startsWith(`schedule:${name}-`))).toBe(true);
      const action = (await client.schedule.getHandle(`schedule:${name}`).describe()).action;
      const attrs = action.typedSearchAttributes;
      expect(attrs instanceof TypedSearchAttributes ? attrs.get(ArmadaWorkflow) : attrs?.find((p) => p.key.name === ArmadaWorkflow.name)?.value).toBe(name);
    } finally {
      await sched('DELETE', `/api/v1/workflows/${name}`);
    }
  });

  test('a namespace without them: the check names all six and the command; registering adds them', async () => {
    const namespace = `sa-missing-${crypto.randomBytes(4).toString('hex')}`;
    await client.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    const missing = await eventually(async () => {
      const m = await missingSearchAttributes(client.connection, namespace);
      return m.length ? m : undefined;
    });
    expect(missing).toEqual(NAMES);

    // a worker does not start on it
    ensureTemporalRuntime();
    const err = await startWorkers({ config: stack.config, db: stack.db, logger, metrics: stack.metrics, address: env('ARMADA_TEST_TEMPORAL_ADDRESS'), namespace }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SearchAttributesMissing);
    const command = `temporal operator search-attribute create --namespace ${namespace} --type Keyword ${NAMES.map((n) => `--name ${n}`).join(' ')}`;
    expect((err as Error).message).toBe(
      `Temporal namespace "${namespace}" lacks Armada's search attributes ${NAMES.join(', ')}; create them with: ${command} (docs/operations.md#search-attributes)`,
    );

    // `armada worker` and `armada api` exit 1 with that one line
    const home = fs.mkdtempSync(`${os.tmpdir()}/armada-sa-`);
    const childEnv = {
      ...process.env,
      ARMADA_HOME: home,
      DATABASE_URL: stack.dbUrl,
      TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
      TEMPORAL_NAMESPACE: namespace,
      ARMADA_API_KEY: 'test-api-key-0123456789',
      ARMADA_TASK_PORT: '0',
      ARMADA_SCHEDULER_PORT: '0',
      ARMADA_SCHEDULER_ALT_PORT: '',
      ARMADA_AGENTS_PORT: '0',
      ARMADA_TRACES_PORT: '0',
      ARMADA_LOG_LEVEL: 'error',
    };
    try {
      for (const args of [['worker'], ['api', '--service', 'traces']]) {
        const out = await run(process.execPath, [ARMADA_BIN, ...args], { env: childEnv, timeout: 60_000 }).then(
          () => ({ code: 0, stderr: '' }),
          (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? '' }),
        );
        expect({ args, code: out.code }).toEqual({ args, code: 1 });
        const lines = out.stderr.trim().split('\n');
        expect(lines.at(-1)).toBe(`armada: ${(err as Error).message}`);
      }
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }

    // the embedded dev server's path for an older temporal.db: the missing ones are added
    expect(await registerSearchAttributes(client.connection, namespace)).toEqual(NAMES);
    await eventually(async () => (await missingSearchAttributes(client.connection, namespace)).length === 0);
    expect(await registerSearchAttributes(client.connection, namespace)).toEqual([]);
  }, 180_000);

  test('armada start on a temporal.db from before them: its dev server gets the missing ones added', async () => {
    const dir = fs.mkdtempSync(`${os.tmpdir()}/armada-sa-db-`);
    const dbFile = `${dir}/temporal.db`;
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const cli = await temporalCli();
    const missingOn = async () => {
      const connection = await Connection.connect({ address });
      try {
        return await missingSearchAttributes(connection, 'default');
      } finally {
        await connection.close();
      }
    };
    try {
      // the dev server as an older armada started it: no --search-attribute flags
      const old = spawn(cli, ['server', 'start-dev', '--db-filename', dbFile, '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'error'], { stdio: 'ignore' });
      const exited = new Promise((r) => old.once('exit', r));
      try {
        await waitForTemporal(address, 'default', 60_000);
        expect(await missingOn()).toEqual(NAMES);
      } finally {
        old.kill('SIGTERM');
        await exited;
      }
      const dev = await startTemporalDevServer({ cliPath: cli, toolsDir: os.tmpdir(), onProgress: () => undefined, dbFile, ip: '127.0.0.1', port, uiPort: null, namespace: 'default', logger });
      try {
        expect(await eventually(async () => ((await missingOn()).length === 0 ? 'none' : undefined))).toBe('none');
      } finally {
        await dev.stop();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
