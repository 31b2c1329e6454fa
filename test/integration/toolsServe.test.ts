/**
 * `armada tools serve` against a running Armada (task service + scheduler listening on loopback): the MCP SDK
 * client lists the curated tools and creates a task, which lands in the tasks table.
 */
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SCHEDULER_TOOLS, TASK_SERVICE_TOOLS } from '../../lib/mcp/armadaTools';
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

const BIN = path.join(__dirname, '..', '..', 'bin', 'armada');
let stack: TestStack;
let taskUrl: string;
let schedulerUrl: string;
let projectId: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task', 'scheduler'] });
  await stack.app('task').listen({ host: '127.0.0.1', port: 0 });
  await stack.app('scheduler').listen({ host: '127.0.0.1', port: 0 });
  taskUrl = `http://127.0.0.1:${(stack.app('task').server.address() as AddressInfo).port}`;
  schedulerUrl = `http://127.0.0.1:${(stack.app('scheduler').server.address() as AddressInfo).port}`;
  const project = await stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'MCP project', repository: { url: makeGitRepo() } } });
  expect(project.statusCode).toBe(201);
  projectId = project.json().data.id;
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const text = (r: object) => ((r as { content: { text: string }[] }).content[0] as { text: string }).text;

test('creates a task through MCP against the running services', async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'tools', 'serve'],
    env: { ...process.env, ARMADA_TASK_URL: taskUrl, ARMADA_SCHEDULER_URL: schedulerUrl, ARMADA_API_KEY: stack.keys.scheduler } as Record<string, string>,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c) => {
    stderr += c;
  });
  const client = new Client({ name: 'armada-test', version: '1.0.0' });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    // the curated list, minus operations this build of the services does not have
    const curated = [...TASK_SERVICE_TOOLS, ...SCHEDULER_TOOLS].map((c) => c.tool);
    for (const n of names) expect(curated).toContain(n);
    expect(names).toEqual(expect.arrayContaining(['list_tasks', 'get_task', 'create_task', 'list_projects']));
    const create = tools.find((t) => t.name === 'create_task');
    expect(create?.inputSchema.required).toEqual(expect.arrayContaining(['projectId', 'title']));

    const created = await client.callTool({ name: 'create_task', arguments: { projectId, title: 'Made through MCP', priority: 'high', labels: ['mcp'] } });
    expect(created.isError).toBeFalsy();
    expect(text(created)).toContain('HTTP 201');
    const body = JSON.parse(text(created).slice(text(created).indexOf('{')));
    expect(body.data).toMatchObject({ projectId, title: 'Made through MCP', status: 'pending', priority: 'high' });

    const row = await stack.db.query('SELECT project_id, title, priority, labels, status FROM tasks WHERE id = $1', [body.data.id]);
    expect(row.rows[0]).toEqual({ project_id: projectId, title: 'Made through MCP', priority: 'high', labels: ['mcp'], status: 'pending' });

    const listed = await client.callTool({ name: 'list_tasks', arguments: { projectId } });
    expect(text(listed)).toContain(body.data.id);
    // a client mistake comes back as a tool error with the service's envelope
    const bad = await client.callTool({ name: 'create_task', arguments: { projectId } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toContain('HTTP 400');
  } catch (e) {
    throw new Error(`${(e as Error).message}\ntools serve stderr:\n${stderr}`);
  } finally {
    await client.close();
  }
}, 120_000);
