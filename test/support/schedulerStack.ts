/**
 * The scheduler's integration tests' stack: the scheduler API and a worker on a fresh database, health checks off,
 * requests with the test API key, and a close that deletes the Temporal Schedules the tests created (they live in
 * the shared dev server, beyond the test's database). `schedulerStackForFile` sets it up for a whole test file, with a
 * fake flow platform and a temp dir.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { buildSchedulerApp } from '../../api/scheduler/app';
import type { Faults } from '../../lib/faults';
import { startFakeFlowBuilder, type FakeFlowBuilder } from './fakeFlowBuilder';
import { TEST_API_KEY, eventually, logger, startTestStack, type TestStack } from './harness';

/**
 * The stack; `faults`: the worker's test-only fault hooks (lib/faults.ts); `worker: false`: no worker, so a run Temporal
 * starts waits in its task queue with its row unwritten.
 */
export function startSchedulerStack(opts: { faults?: Faults; worker?: boolean } = {}): Promise<TestStack> {
  return startTestStack({ services: ['scheduler'], worker: opts.worker ?? true, faults: opts.faults, file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
}

/** A request to the stack's scheduler API with the test key. */
export function schedulerInject(stack: TestStack) {
  return (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    stack.app('scheduler').inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });
}

export type SchedulerInject = ReturnType<typeof schedulerInject>;

/**
 * Another scheduler API on the stack's database and Temporal whose every workflow start first awaits
 * `beforeStart(workflowId)`: a manual run's (or a retry's) row is written by then and its Temporal run not yet
 * started, so a test can do something at that very moment (the start goes on when the hook returns).
 */
export async function schedulerApiWithStartHook(
  stack: TestStack,
  beforeStart: (workflowId: string) => Promise<void>,
): Promise<{ inject: SchedulerInject; close(): Promise<void> }> {
  const base = await stack.temporal.client();
  const client = new Client({
    connection: base.connection,
    namespace: base.options.namespace,
    interceptors: {
      workflow: [
        {
          async startWithDetails(input, next) {
            await beforeStart(input.options.workflowId);
            return next(input);
          },
        },
      ],
    },
  });
  const temporal = { client: async () => client, reconnect: () => undefined, close: async () => undefined };
  const app = await buildSchedulerApp({ db: stack.db, config: stack.config, keys: stack.keys, temporal, logger, metrics: stack.metrics, secondListener: true });
  await app.ready();
  return {
    inject: (method, url, payload) => app.inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } }),
    close: () => app.close(),
  };
}

/** What a test file gets from schedulerStackForFile(). The fields are set in its beforeAll: read them in tests and hooks. */
export interface SchedulerFixture {
  readonly stack: TestStack;
  /** a fake flow platform (test/support/fakeFlowBuilder.ts), answering every source of the file */
  readonly fake: FakeFlowBuilder;
  /** a directory of the file's own, removed after its tests */
  readonly tmp: string;
  /** a request to the scheduler API with the test key */
  inject: SchedulerInject;
}

/**
 * The scheduler stack, a fake flow platform and a temp dir for the calling test file: started in beforeAll, closed
 * in afterAll (the platform, then the stack and its Temporal Schedules, then the dir).
 */
export function schedulerStackForFile(opts: { faults?: Faults } = {}): SchedulerFixture {
  let started: { stack: TestStack; fake: FakeFlowBuilder; tmp: string } | undefined;
  const get = () => {
    if (!started) throw new Error('the scheduler stack is not started: use it inside tests and hooks');
    return started;
  };
  beforeAll(async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-sched-'));
    const stack = await startSchedulerStack(opts);
    const fake = await startFakeFlowBuilder().catch(async (err) => {
      await closeSchedulerStack(stack);
      throw err;
    });
    started = { stack, fake, tmp };
  });
  afterAll(async () => {
    if (!started) return;
    await started.fake.close();
    await closeSchedulerStack(started.stack);
    fs.rmSync(started.tmp, { recursive: true, force: true });
  });
  return {
    get stack() {
      return get().stack;
    },
    get fake() {
      return get().fake;
    },
    get tmp() {
      return get().tmp;
    },
    inject: (method, url, payload) => schedulerInject(get().stack)(method, url, payload),
  };
}

/** Runs workflow `name` through the stack's API and waits until its execution is no longer running. */
export async function runWorkflowToEnd(stack: TestStack, name: string, timeoutMs = 60_000): Promise<{ id: string; execution: { status: string; tasks: { output: string; error: string | null }[] } }> {
  const inject = schedulerInject(stack);
  const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId as string;
  const execution = await eventually(async () => {
    const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
    return e.status !== 'running' && e;
  }, timeoutMs);
  return { id, execution };
}

/** Deletes the Temporal Schedules of the stack's database's schedules, then closes the stack. */
export async function closeSchedulerStack(stack: TestStack): Promise<void> {
  const client = await stack.temporal.client();
  for (const s of (await stack.db.query<{ temporal_id: string }>('SELECT temporal_id FROM scheduler_schedules')).rows) {
    await client.schedule
      .getHandle(s.temporal_id)
      .delete()
      .catch(() => undefined);
  }
  await stack.close();
}
