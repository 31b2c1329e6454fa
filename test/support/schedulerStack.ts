/**
 * The scheduler's integration tests' stack: the scheduler API and a worker on a fresh database, health checks off,
 * requests with the test API key, and a close that deletes the Temporal Schedules the tests created (they live in
 * the shared dev server, beyond the test's database).
 */
import { TEST_API_KEY, eventually, startTestStack, type TestStack } from './harness';

export function startSchedulerStack(): Promise<TestStack> {
  return startTestStack({ services: ['scheduler'], worker: true, file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
}

/** A request to the stack's scheduler API with the test key. */
export function schedulerInject(stack: TestStack) {
  return (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    stack.app('scheduler').inject({ method, url, payload: payload as object, headers: { 'x-api-key': TEST_API_KEY } });
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
