/** Each service's /metrics serves its own series: the open /metrics of scheduler, agents and traces carry no task-service counters. */
import { SERVICE_NAMES } from '../../api/services';
import { startTestStack, type TestStack } from '../support/harness';

const KEY = 'test-api-key-0123456789';
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ services: [...SERVICE_NAMES] });
});
afterAll(async () => stack?.close());

/** The `service` label values of armada_http_requests_total in a /metrics text. */
const servicesIn = (text: string) => [...new Set([...text.matchAll(/^armada_http_requests_total\{[^}]*service="(\w+)"/gm)].map((m) => m[1]))].sort();

test("every service's /metrics has only its own request series; process metrics go with the task service", async () => {
  expect((await stack.app('task').inject({ method: 'GET', url: '/api/projects' })).statusCode).toBe(200);
  expect((await stack.app('task').inject({ method: 'GET', url: '/api/tasks/no-such-task' })).statusCode).toBe(404);
  for (const name of ['scheduler', 'agents', 'traces'] as const) {
    await stack.app(name).inject({ method: 'GET', url: '/api/v1/nothing-here', headers: { 'x-api-key': KEY } });
  }
  const scrape = async (name: (typeof SERVICE_NAMES)[number]) => (await stack.app(name).inject({ method: 'GET', url: '/metrics' })).body;
  const task = await scrape('task');
  expect(servicesIn(task)).toEqual(['task']);
  expect(task).toContain('route="/api/tasks/:id"');
  expect(task).toContain('armada_process_process_cpu_user_seconds_total');
  for (const name of ['scheduler', 'agents', 'traces'] as const) {
    const text = await scrape(name);
    expect([name, servicesIn(text)]).toEqual([name, [name]]);
    expect(text).not.toContain('/api/tasks');
    expect(text).not.toContain('armada_process_');
    expect(text).not.toContain('armada_task_read_cache_total');
  }
});
