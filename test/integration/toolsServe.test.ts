/**
 * `armada tools serve` against a running Armada (task service + scheduler listening on loopback): the MCP SDK
 * client lists the curated tools (named by operationId) and creates a task, which lands in the tasks table; a
 * wrong key or an unreachable service stops it at start unless --allow-partial; `armada tools openapi --list` over
 * the task service's own document.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { SCHEDULER_TOOLS, TASK_SERVICE_TOOLS } from '../../lib/mcp/armadaTools';
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';
import { ARMADA_BIN as BIN } from '../support/armadaProcess';

let stack: TestStack;
let taskUrl: string;
let schedulerUrl: string;
let projectId: string;
/** A loopback port nothing listens on (bound once, then closed). */
let closedUrl: string;

beforeAll(async () => {
  stack = await startTestStack({ services: ['task', 'scheduler'] });
  await stack.app('task').listen({ host: '127.0.0.1', port: 0 });
  await stack.app('scheduler').listen({ host: '127.0.0.1', port: 0 });
  taskUrl = `http://127.0.0.1:${(stack.app('task').server.address() as AddressInfo).port}`;
  schedulerUrl = `http://127.0.0.1:${(stack.app('scheduler').server.address() as AddressInfo).port}`;
  const project = await stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'MCP project', repository: { url: makeGitRepo() } } });
  expect(project.statusCode).toBe(201);
  projectId = project.json().data.id;
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  closedUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise((r) => probe.close(r));
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
    expect(names).toEqual(expect.arrayContaining(['listTasks', 'getTask', 'createTask', 'listProjects', 'startTaskAttempt', 'listPendingApprovals', 'runWorkflow']));
    const create = tools.find((t) => t.name === 'createTask');
    // described by the operation's summary + description, not just its method and path
    expect(create?.description).toMatch(/^Create a task\n\nCreates a pending task/);
    for (const t of tools) expect(t.description?.split('\n')[0]).not.toMatch(/^(GET|POST|PUT|PATCH|DELETE) \//);
    expect(create?.inputSchema.required).toEqual(expect.arrayContaining(['projectId', 'title']));

    const created = await client.callTool({ name: 'createTask', arguments: { projectId, title: 'Made through MCP', priority: 'high', labels: ['mcp'] } });
    expect(created.isError).toBeFalsy();
    expect(text(created)).toContain('HTTP 201');
    const body = JSON.parse(text(created).slice(text(created).indexOf('{')));
    expect(body.data).toMatchObject({ projectId, title: 'Made through MCP', status: 'pending', priority: 'high' });

    const row = await stack.db.query('SELECT project_id, title, priority, labels, status FROM tasks WHERE id = $1', [body.data.id]);
    expect(row.rows[0]).toEqual({ project_id: projectId, title: 'Made through MCP', priority: 'high', labels: ['mcp'], status: 'pending' });

    const listed = await client.callTool({ name: 'listTasks', arguments: { projectId } });
    expect(text(listed)).toContain(body.data.id);
    // a client mistake comes back as a tool error with the service's envelope
    const bad = await client.callTool({ name: 'createTask', arguments: { projectId } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toContain('HTTP 400');
    // an unknown tool is a JSON-RPC error -32602 (invalid params), not a tool result
    const unknown = await client.callTool({ name: 'create_task', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((unknown as McpError).code).toBe(-32602);
    expect((unknown as McpError).message).toContain('unknown tool create_task');
  } catch (e) {
    throw new Error(`${(e as Error).message}\ntools serve stderr:\n${stderr}`);
  } finally {
    await client.close();
  }
}, 120_000);

/** Runs bin/armada to completion (stdin closed), returning its exit code and output. */
function run(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

describe('tools serve at start', () => {
  test('a service that rejects the key stops it with one line and exit 1', async () => {
    const r = await run(['tools', 'serve'], { ARMADA_TASK_URL: taskUrl, ARMADA_SCHEDULER_URL: schedulerUrl, ARMADA_API_KEY: 'wrong-key', ARMADA_TASK_API_KEY: stack.keys.task ?? '', ARMADA_SCHEDULER_API_KEY: '' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`the scheduler service at ${schedulerUrl} rejected the API key (HTTP 401)`);
    expect(r.stderr).toContain('--allow-partial');
  }, 60_000);

  test('an unreachable service stops it with one line and exit 1', async () => {
    const r = await run(['tools', 'serve', '--scheduler-url', closedUrl], { ARMADA_TASK_URL: taskUrl, ARMADA_API_KEY: stack.keys.scheduler, ARMADA_TASK_API_KEY: stack.keys.task ?? '', ARMADA_SCHEDULER_API_KEY: '' });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`the scheduler service at ${closedUrl} is unreachable (ECONNREFUSED)`);
  }, 60_000);

  test('a --task-url or --scheduler-url that is not an http(s) URL, or holds a password: one line, exit 2, before any request', async () => {
    // before, `not a url` was read as a file path: "cannot read not a url/api/openapi.json: no such file"
    const junk = await run(['tools', 'serve', '--task-url', 'not a url'], { ARMADA_SCHEDULER_URL: closedUrl });
    expect(junk).toMatchObject({ code: 2, stderr: 'armada tools: --task-url "not a url" is not an http(s) URL; give the service\'s URL, such as http://127.0.0.1:8080/v1\n' });
    const secret = await run(['tools', 'serve', '--scheduler-url', 'http://me:s3cret@127.0.0.1:9'], { ARMADA_TASK_URL: closedUrl });
    expect(secret.code).toBe(2);
    expect(secret.stderr).toMatch(/^armada tools: --scheduler-url holds a user name or password/);
    expect(secret.stderr).not.toContain('s3cret');
    // the same URL in ARMADA_SCHEDULER_URL (read as configured): fetch refuses it, and the line shows the password as ***
    const fromEnv = await run(['tools', 'serve'], { ARMADA_TASK_URL: taskUrl, ARMADA_SCHEDULER_URL: 'http://me:s3cret-env@127.0.0.1:9', ARMADA_API_KEY: stack.keys.scheduler, ARMADA_TASK_API_KEY: stack.keys.task ?? '' });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toContain('the scheduler service at http://me:***@127.0.0.1:9 is unreachable (the URL holds a user name or password, which fetch does not send; give the key another way)');
    expect(fromEnv.stderr).not.toContain('s3cret-env');
  }, 60_000);

  test('--allow-partial serves the tools of the services that answered', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'tools', 'serve', '--allow-partial', '--scheduler-url', closedUrl],
      env: { ...process.env, ARMADA_TASK_URL: taskUrl, ARMADA_API_KEY: stack.keys.scheduler, ARMADA_TASK_API_KEY: stack.keys.task ?? '', ARMADA_SCHEDULER_API_KEY: '' } as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (c) => {
      stderr += c;
    });
    const client = new Client({ name: 'armada-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('createTask');
      expect(names).not.toContain('runWorkflow');
      expect(stderr).toContain(`the scheduler service at ${closedUrl} is unreachable (ECONNREFUSED)`);
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('tools serve finds its key as the other CLI commands do', () => {
  /** No key variable set: only what ARMADA_HOME holds. */
  const noKeyEnv = (home: string) => ({ ARMADA_HOME: home, ARMADA_CONFIG: '', ARMADA_TASK_URL: taskUrl, ARMADA_SCHEDULER_URL: schedulerUrl, ARMADA_API_KEY: '', ARMADA_SCHEDULER_API_KEY: '', ARMADA_TASK_API_KEY: '' });

  test("without ARMADA_API_KEY it sends the key armada start stored in $ARMADA_HOME/api-key", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-tools-home-'));
    fs.writeFileSync(path.join(home, 'api-key'), `${stack.keys.scheduler}\n`, { mode: 0o600 });
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'tools', 'serve'], env: { ...process.env, ...noKeyEnv(home) } as Record<string, string>, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (c) => {
      stderr += c;
    });
    const client = new Client({ name: 'armada-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['createTask', 'runWorkflow', 'listWorkflows']));
      // the tool calls carry it too
      const listed = await client.callTool({ name: 'listWorkflows', arguments: {} });
      expect(listed.isError).toBeFalsy();
      expect(text(listed)).toMatch(/^HTTP 200\b/);
    } catch (e) {
      throw new Error(`${(e as Error).message}\ntools serve stderr:\n${stderr}`);
    } finally {
      await client.close();
      fs.rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);

  test('with no key anywhere, the scheduler that asks for one is one line saying where the key comes from, exit 1', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-tools-nokey-'));
    try {
      const r = await run(['tools', 'serve'], noKeyEnv(home));
      expect([r.code, r.stdout]).toEqual([1, '']);
      expect(r.stderr).toBe(
        `armada tools serve: the scheduler service at ${schedulerUrl} asked for an API key and none was found: set ARMADA_API_KEY (or ARMADA_SCHEDULER_API_KEY), or use the ARMADA_HOME whose armada start wrote it (${home}/api-key does not exist) (use --allow-partial to serve the other services' tools)\n`,
      );
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);
});

test("without ARMADA_TASK_URL and ARMADA_SCHEDULER_URL it goes where armada start serves them: ARMADA_HOST and the services' ports", async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-tools-ports-'));
  const env: NodeJS.ProcessEnv = { ...process.env, ARMADA_HOME: home, ARMADA_CONFIG: '', ARMADA_API_KEY: stack.keys.scheduler, ARMADA_HOST: '127.0.0.1', ARMADA_TASK_PORT: new URL(taskUrl).port, ARMADA_SCHEDULER_PORT: new URL(schedulerUrl).port };
  delete env.ARMADA_TASK_URL;
  delete env.ARMADA_SCHEDULER_URL;
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'tools', 'serve'], env: env as Record<string, string>, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (c) => {
    stderr += c;
  });
  const client = new Client({ name: 'armada-test', version: '1.0.0' });
  try {
    await client.connect(transport);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['listProjects', 'runWorkflow']));
    const projects = await client.callTool({ name: 'listProjects', arguments: {} });
    expect(text(projects)).toContain(projectId);
  } catch (e) {
    throw new Error(`${(e as Error).message}\ntools serve stderr:\n${stderr}`);
  } finally {
    await client.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
}, 60_000);

test('armada tools openapi <task document> --list names every tool from its operationId and describes it', async () => {
  const r = await run(['tools', 'openapi', `${taskUrl}/api/openapi.json`, '--list', ...(stack.keys.task ? ['--header', `Authorization: Bearer ${stack.keys.task}`] : [])], {});
  expect(r.code).toBe(0);
  const tools = JSON.parse(r.stdout) as { name: string; description: string; method: string; path: string }[];
  expect(tools.length).toBeGreaterThan(60);
  for (const t of tools) {
    expect(t.name).toMatch(/^[a-z][a-zA-Z0-9]{2,39}$/);
    expect(t.description.trim()).not.toBe(`${t.method} ${t.path}`);
    expect(t.description.split('\n')[0]).not.toMatch(/\/api\//);
  }
  expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
  expect(tools.find((t) => t.method === 'POST' && t.path === '/api/attempts/{id}/start')).toMatchObject({ name: 'startTaskAttempt', description: expect.stringMatching(/^Start an attempt\n\n/) });
  expect(tools.find((t) => t.path === '/api/approvals/pending')?.name).toBe('listPendingApprovals');
}, 60_000);
