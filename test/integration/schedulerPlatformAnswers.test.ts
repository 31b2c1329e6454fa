/**
 * Odd answers of a flow platform (docs/scheduler.md#platforms): a flow is sent at most once whatever its answer
 * holds, and what Armada keeps of a platform's answers is storable. Before, a run answer nested 5000 levels deep threw
 * a RangeError in JSON.stringify after it arrived; the try took it for an unreachable platform, gave the task back and
 * the flow was sent three times (`Task f failed: Maximum call stack size exceeded`).
 */
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import type { TestStack } from '../support/harness';
import { closeSchedulerStack, runWorkflowToEnd, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let fake: FakeFlowBuilder;
let inject: ReturnType<typeof schedulerInject>;

beforeAll(async () => {
  stack = await startSchedulerStack();
  fake = await startFakeFlowBuilder();
  inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/sources', { name: 'odd', source_type: 'langflow', url: fake.url })).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  await fake?.close();
  if (stack) await closeSchedulerStack(stack);
});

/** `{"outputs":[[…]]}` with `depth` levels of arrays and objects in all. */
const nested = (depth: number): string => `{"outputs":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
const runsSent = () => fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/api/v1/run/')).length;

/** Creates workflow `name` with one flow task `f`, runs it with the fake answering `answer`: the execution and the POSTs it sent. */
async function runWithAnswer(name: string, answer: string) {
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 'f', type: 'flow', source: 'odd', flow: FAKE_FLOWS.summarise.id }] })).statusCode).toBe(201);
  fake.rawAnswers.run = answer;
  const before = runsSent();
  try {
    const { execution } = await runWorkflowToEnd(stack, name);
    return { execution, sent: runsSent() - before };
  } finally {
    fake.rawAnswers.run = undefined;
  }
}

describe('a flow is sent once whatever its answer', () => {
  test('an answer nested 5000 levels deep: one POST, the task fails saying the answer could not be read', async () => {
    const { execution, sent } = await runWithAnswer('deep-5000', nested(5000));
    expect(sent).toBe(1);
    expect(execution.status).toBe('failed');
    expect(execution.tasks[0]?.error).toContain("the platform's answer could not be read");
  }, 90_000);
});
