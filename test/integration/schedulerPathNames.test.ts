/**
 * Workflow names are path segments (docs/scheduler.md#workflow-names): `.` and `..` are refused at creation, since
 * every URL parser resolves them away and no client could reach such a workflow again. Before, both were created,
 * and `armada schedules list --workflow ..` asked for /api/v1/schedules and listed every workflow's schedules.
 */
import type { CliIo } from '../../cli/schedulerClient';
import { runSchedules } from '../../cli/schedules';
import { runWorkflows } from '../../cli/workflows';
import { WORKFLOW_NAME } from '../../api/scheduler/schemas';
import { TEST_API_KEY, startTestStack, type TestStack } from '../support/harness';
import { closeSchedulerStack, schedulerInject } from '../support/schedulerStack';

let stack: TestStack;
let url: string;
let inject: ReturnType<typeof schedulerInject>;

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  url = await stack.app('scheduler').listen({ host: '127.0.0.1', port: 0 });
  inject = schedulerInject(stack);
}, 120_000);
afterAll(async () => {
  if (stack) await closeSchedulerStack(stack);
});

const workflow = (name: string) => ({ name, tasks: [{ name: 's', type: 'script', script: 'true' }] });

test('. and .. are a 400 at creation, naming the pattern; names with dots that are no dot segment are created and reachable over HTTP', async () => {
  for (const name of ['.', '..']) {
    const r = await inject('POST', '/api/v1/workflows', workflow(name));
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ detail: `Request body is invalid: name must match pattern "${WORKFLOW_NAME}"` });
  }
  expect((await stack.db.query("SELECT count(*)::int AS n FROM scheduler_workflows WHERE name IN ('.', '..')")).rows[0].n).toBe(0);
  for (const name of ['...', '.a', '..a', 'a.', 'a..', '-', '_', 'x'.repeat(100)]) {
    expect([name, (await inject('POST', '/api/v1/workflows', workflow(name))).statusCode]).toEqual([name, 201]);
    // a real client's request: the name travels as written and comes back
    const r = await fetch(`${url}/api/v1/workflows/${encodeURIComponent(name)}`, { headers: { 'x-api-key': TEST_API_KEY } });
    expect([name, r.status, ((await r.json()) as { name: string }).name]).toEqual([name, 200, name]);
  }
  for (const name of ['.'.repeat(101), 'x'.repeat(101), '']) expect([name, (await inject('POST', '/api/v1/workflows', workflow(name))).statusCode]).toEqual([name, 400]);
});

test('the CLI refuses . and .. as a workflow rather than asking for another path', async () => {
  const cli = async (run: (argv: string[], io: CliIo) => Promise<number>, argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await run(argv, { env: { ARMADA_SCHEDULER_URL: url, ARMADA_API_KEY: TEST_API_KEY }, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  };
  expect((await inject('POST', '/api/v1/workflows', { ...workflow('with-cron'), schedule: '0 3 * * *' })).statusCode).toBe(201);
  expect((await cli(runSchedules, ['list'])).stdout).toContain('with-cron');
  for (const name of ['.', '..']) {
    expect(await cli(runSchedules, ['list', '--workflow', name])).toEqual({ code: 1, stdout: '', stderr: `armada: no workflow is named "${name}": . and .. are never names (a URL path cannot carry them)\n` });
    expect((await cli(runWorkflows, ['run', name])).stderr).toBe(`armada: no workflow is named "${name}": . and .. are never names (a URL path cannot carry them)\n`);
  }
});

test("blank names are a 400 naming the field: a flow task's flow, and the executions list's workflow filter", async () => {
  // the flow was the one name of a workflow's tasks that could be white space alone (source and name could not)
  for (const flow of [' ', '\t\n', '\u3000', '\ufeff']) {
    const r = await inject('POST', '/api/v1/workflows', { name: 'blank-flow', tasks: [{ name: 'f', type: 'flow', source: 'contract', flow }] });
    expect([JSON.stringify(flow), r.statusCode, r.json().detail]).toEqual([JSON.stringify(flow), 400, expect.stringMatching(/^Request body is invalid: tasks\.0\.flow must match pattern /)]);
  }
  // no workflow is named white space (WORKFLOW_NAME): such a filter was answered 200 with an empty list
  for (const q of ['%20', '%09', '%E3%80%80', '%20%20']) {
    const r = await inject('GET', `/api/v1/executions?workflow=${q}`);
    expect([q, r.statusCode, r.json().detail]).toEqual([q, 400, expect.stringMatching(/^Request query is invalid: workflow must match pattern /)]);
  }
  expect((await inject('GET', '/api/v1/executions?workflow=no-such-workflow')).json()).toEqual({ executions: [] });
  expect((await inject('GET', '/api/v1/executions?workflow=%20a%20')).statusCode).toBe(200);
});
