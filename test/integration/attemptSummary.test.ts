/**
 * An attempt's output summary for JSON-format agents: the agent's result event, or without one the last message of
 * the main agent (the same rule as multi-agent results, activities/agent/parsers/finalMessage.ts).
 */
import path from 'node:path';
import { agentConfig, api } from '../support/attemptHelpers';
import { startTestStack, type TestStack } from '../support/harness';

const STREAM_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'stream-json-agent.js');
let stack: TestStack;

beforeAll(async () => {
  const base = agentConfig();
  stack = await startTestStack({
    services: ['task'],
    worker: true,
    file: { ...base, agents: { ...base.agents, streamy: { command: [process.execPath, STREAM_AGENT], format: 'claude-stream-json' } } },
  });
});
afterAll(async () => {
  await stack.close();
});

test('summary = the result event, else the last assistant text (not the JSON lines)', async () => {
  const h = api(stack);
  const p = await h.project();
  const withResult = await h.start(await h.task(p.id, 'Summarise', 'describe the repository'), 'streamy');
  const noResult = await h.start(await h.task(p.id, 'Summarise again', 'NORESULT describe the repository'), 'streamy');
  const a = await h.until(withResult.attemptId, ['completed']);
  const b = await h.until(noResult.attemptId, ['completed']);
  expect(a.output.summary).toMatch(/^Final answer for: .+\nAll checks passed\.$/);
  expect(b.output.summary).toMatch(/^Last words for: /);
  expect(b.output.summary).not.toContain('{');
}, 60_000);
