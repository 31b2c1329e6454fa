/**
 * Agents named like a property of every JavaScript object (`__proto__`, `constructor`, `toString`): a config file may
 * name them so, and attempts run under such names. Project stats' `costs.byLLM` and the project detail's
 * `config.llms` hold them as keys like any other (an assignment `byLlm['__proto__'] = cost` set the prototype, so the
 * key was missing while its cost was in the total).
 */
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let projectId: string;

// JSON.parse makes "__proto__" an own key, which JSON.stringify (the harness writes config.json with it) keeps
const agents = JSON.parse('{"__proto__": {"command": ["true"], "model": "proto-model"}, "constructor": {"command": ["true"], "model": "ctor-model"}}');

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'], file: { agents } });
  const repo = makeGitRepo();
  const created = await stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'Odd agents', repository: { url: repo } } });
  expect(created.statusCode).toBe(201);
  projectId = created.json().data.id;
  await stack.db.query(`INSERT INTO tasks (id, project_id, title, status) VALUES ('odd-task', $1, 'odd', 'completed')`, [projectId]);
  await stack.db.query(
    `INSERT INTO attempts (id, task_id, number, llm, status, branch, total_cost)
     VALUES ('odd-1', 'odd-task', 1, '__proto__', 'completed', 'b-odd-1', 0.5),
            ('odd-2', 'odd-task', 2, '__proto__', 'failed', 'b-odd-2', 0.25),
            ('odd-3', 'odd-task', 3, 'constructor', 'completed', 'b-odd-3', 1),
            ('odd-4', 'odd-task', 4, 'toString', 'completed', 'b-odd-4', 2),
            ('odd-5', 'odd-task', 5, 'claude', 'completed', 'b-odd-5', 4)`,
  );
});
afterAll(async () => {
  await stack.close();
});

/** The keys and values of a JSON object as the text has them (JSON.parse keeps "__proto__" as an own key too). */
const entriesOf = (o: object) => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1));

test('costs.byLLM has a key per agent, __proto__ included, and they add up to costs.total', async () => {
  const res = await stack.app('task').inject({ method: 'GET', url: `/api/projects/${projectId}/stats` });
  expect(res.statusCode).toBe(200);
  const costs = res.json().data.costs;
  expect(costs.total).toBeCloseTo(7.75);
  expect(entriesOf(costs.byLLM)).toEqual([
    ['__proto__', 0.75],
    ['claude', 4],
    ['constructor', 1],
    ['toString', 2],
  ]);
  expect(res.body).toContain('"__proto__":0.75');
});

test("the project detail's config.llms names the configured agent __proto__ with its model", async () => {
  const res = await stack.app('task').inject({ method: 'GET', url: `/api/projects/${projectId}` });
  expect(res.statusCode).toBe(200);
  expect(entriesOf(res.json().data.config.llms)).toEqual([
    ['__proto__', { model: 'proto-model' }],
    ['constructor', { model: 'ctor-model' }],
  ]);
});
