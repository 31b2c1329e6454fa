/**
 * Every child process (agent of an attempt, project setup script, scheduler script, multi-agent task) gets the
 * allow-listed environment plus its profile's `env`: the server's secrets set in this (the worker's) process are
 * absent from what the children print, and the variables a profile names are present.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, makeGitRepo, startTestStack, type TestStack } from '../support/harness';

const ENV_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'env-agent.js');
const SCHEDULER_KEY = 'test-api-key-0123456789';
const MULTI_AGENT = `envdump-${crypto.randomBytes(3).toString('hex')}`;

/** The server's secrets, set in the worker's process once the stack is up (its config is already loaded). */
const SERVER_SECRETS: Record<string, string> = {
  DATABASE_URL: 'postgres://leak:leak@db/armada',
  ARMADA_ENCRYPTION_KEY: 'leak-encryption-key',
  ARMADA_API_KEY: 'leak-api-key',
  ARMADA_TASK_API_KEY: 'leak-task-key',
  ARMADA_SCHEDULER_API_KEY: 'leak-scheduler-key',
  ARMADA_TRACES_API_KEY: 'named-traces-key',
  TEMPORAL_ADDRESS: 'leak-temporal:7233',
  TEMPORAL_NAMESPACE: 'named-namespace',
  GITHUB_TOKEN: 'leak-github-token',
  SOME_SERVICE_SECRET: 'leak-secret',
  ANTHROPIC_API_KEY: 'leak-vendor-key',
};
/** What the test profile's env names: two server variables by reference, one literal. */
const PROFILE_ENV = {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a profile reference to a server variable, not a JS template
  ARMADA_TRACES_API_KEY: '${ARMADA_TRACES_API_KEY}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: as above
  TEMPORAL_NAMESPACE: '${TEMPORAL_NAMESPACE}',
  PROFILE_SETTING: 'from-profile',
  ENV_SHOW: 'ARMADA_TRACES_API_KEY,TEMPORAL_NAMESPACE,PROFILE_SETTING,ARMADA_TASK_ID,ARMADA_WORKTREE',
};
const FORBIDDEN = /^(DATABASE_URL|ARMADA_ENCRYPTION_KEY|ARMADA_\w*API_KEY|TEMPORAL_\w+|\w*_TOKEN|\w*_SECRET|ANTHROPIC_API_KEY)$/;

let stack: TestStack;
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  stack = await startTestStack({
    services: ['task', 'scheduler', 'agents'],
    worker: true,
    file: {
      agents: {
        envdump: { command: [process.execPath, ENV_AGENT], format: 'text', env: PROFILE_ENV },
        envplain: { command: [process.execPath, ENV_AGENT], format: 'text' },
      },
      multiAgent: { agents: [{ name: MULTI_AGENT, role: 'inspector', llm: 'envdump' }] },
      scheduler: { healthCheckIntervalSeconds: 0 },
      attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000 },
    },
  });
  for (const [k, v] of Object.entries(SERVER_SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
afterAll(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const client = await stack.temporal.client();
  await client.workflow
    .getHandle(`agent:${MULTI_AGENT}`)
    .terminate('test over')
    .catch(() => undefined);
  await stack.close();
});

/** The names on the `env-keys:` line a child printed. */
function keysIn(output: string): string[] {
  const line = output.split('\n').find((l) => l.startsWith('env-keys: '));
  if (!line) throw new Error(`no env-keys line in:\n${output}`);
  return line.slice('env-keys: '.length).split(',').filter(Boolean);
}

function expectNoServerSecrets(output: string, named: string[] = []): void {
  const leaked = keysIn(output).filter((k) => FORBIDDEN.test(k) && !named.includes(k));
  expect(leaked).toEqual([]);
  expect(output).not.toContain('leak');
  expect(keysIn(output)).toEqual(expect.arrayContaining(['PATH', 'HOME']));
}

async function startAttempt(llm: string, setupScript = '', repo = makeGitRepo()): Promise<{ attemptId: string; logs: string; setup: string }> {
  const task = stack.app('task');
  const p = await task.inject({ method: 'POST', url: '/api/projects', payload: { name: `env-${crypto.randomBytes(4).toString('hex')}`, repository: { url: repo }, setup_script: setupScript } });
  expect(p.statusCode).toBe(201);
  const t = await task.inject({ method: 'POST', url: '/api/tasks', payload: { projectId: p.json().data.id, title: 'Print the environment' } });
  const s = await task.inject({ method: 'POST', url: `/api/tasks/${t.json().data.id}/start`, payload: { llm } });
  expect(s.statusCode).toBe(200);
  const attemptId = s.json().data.attemptId as string;
  const a = await eventually(async () => {
    const body = (await task.inject({ method: 'GET', url: `/api/attempts/${attemptId}` })).json().data;
    return ['completed', 'failed'].includes(body.status) ? body : undefined;
  }, 30_000);
  expect([a.status, a.error]).toEqual(['completed', null]);
  const lines = (await task.inject({ method: 'GET', url: `/api/attempts/${attemptId}/logs` })).body
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { message: string; source?: string });
  const text = (filter: (l: { source?: string }) => boolean) =>
    lines
      .filter(filter)
      .map((l) => l.message)
      .join('\n');
  return { attemptId, logs: text((l) => l.source !== 'setup'), setup: text((l) => l.source === 'setup') };
}

test("an attempt's agent gets none of the server's secrets, and the variables its profile names", async () => {
  const { attemptId, logs } = await startAttempt('envdump');
  expectNoServerSecrets(logs, ['ARMADA_TRACES_API_KEY', 'TEMPORAL_NAMESPACE']);
  expect(logs).toContain('env ARMADA_TRACES_API_KEY=named-traces-key');
  expect(logs).toContain('env TEMPORAL_NAMESPACE=named-namespace');
  expect(logs).toContain('env PROFILE_SETTING=from-profile');
  expect(logs).toContain('env ARMADA_TASK_ID=');
  expect(logs).toMatch(new RegExp(`env ARMADA_WORKTREE=.*${attemptId}`));
  expect(logs).toContain('prompt via stdin matches ARMADA_PROMPT: true');
  expect(keysIn(logs)).toEqual(expect.arrayContaining(['ARMADA_PROMPT', 'ARMADA_TASK_ID', 'ARMADA_ATTEMPT_ID', 'ARMADA_WORKTREE']));
});

test('a profile without env names passes none of them either', async () => {
  const { logs } = await startAttempt('envplain');
  expectNoServerSecrets(logs);
  expect(keysIn(logs)).not.toContain('PROFILE_SETTING');
});

test("a project's setup script gets the allow-listed environment and the attempt's variables", async () => {
  const { attemptId, setup } = await startAttempt('envplain', 'echo "env-keys: $(compgen -e | tr \'\\n\' \',\')"; echo "worktree $ARMADA_WORKTREE"');
  expectNoServerSecrets(setup);
  expect(setup).toMatch(new RegExp(`worktree .*${attemptId}`));
});

test('a scheduler script gets the allow-listed environment and its execution id', async () => {
  const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    stack.app('scheduler').inject({ method, url, payload: payload as object, headers: { 'x-api-key': SCHEDULER_KEY } });
  const name = `env-${crypto.randomBytes(3).toString('hex')}`;
  const created = await inject('POST', '/api/v1/workflows', {
    name,
    tasks: [{ name: 'env', type: 'script', script: 'echo "env-keys: $(compgen -e | tr \'\\n\' \',\')"; echo "execution $ARMADA_EXECUTION_ID"' }],
  });
  expect(created.statusCode).toBe(201);
  const id = (await inject('POST', `/api/v1/workflows/${name}/run`)).json().executionId;
  const e = await eventually(async () => {
    const body = (await inject('GET', `/api/v1/executions/${id}`)).json();
    return body.status !== 'running' && body;
  }, 30_000);
  expect(e.status).toBe('completed');
  expectNoServerSecrets(e.tasks[0].output);
  expect(e.tasks[0].output).toContain(`execution ${id}`);
});

test("a multi-agent task's process gets the allow-listed environment plus its profile's env", async () => {
  const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    stack.app('agents').inject({ method, url, payload: payload as object, headers: { 'x-api-key': SCHEDULER_KEY } });
  const res = await call('POST', '/api/v1/tasks', { agent: MULTI_AGENT, task: 'print your environment' });
  expect(res.statusCode).toBe(201);
  const done = await eventually(async () => {
    const t = (await call('GET', `/api/v1/tasks/${res.json().taskId}`)).json();
    return ['completed', 'failed'].includes(t.status) ? t : undefined;
  }, 30_000);
  expect(done.status).toBe('completed');
  expectNoServerSecrets(done.result, ['ARMADA_TRACES_API_KEY', 'TEMPORAL_NAMESPACE']);
  expect(done.result).toContain('env ARMADA_TRACES_API_KEY=named-traces-key');
  expect(done.result).toContain('env PROFILE_SETTING=from-profile');
  expect(keysIn(done.result)).toEqual(expect.arrayContaining(['ARMADA_PROMPT', 'ARMADA_TASK_ID', 'ARMADA_AGENT_NAME']));
});

test("a git hook of the project's repository, run by the worker's own git command, gets the allow-listed environment", async () => {
  const repo = makeGitRepo();
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-hook-env-')), 'env.txt');
  // post-checkout runs inside the `git worktree add` of prepareWorktree; an agent could write such a hook itself
  const hook = path.join(repo, '.git', 'hooks', 'post-checkout');
  fs.writeFileSync(hook, `#!/bin/sh\nprintf 'env-keys: %s\\n' "$(env | cut -d= -f1 | tr '\\n' ',')" > '${out}'\nenv | grep -c leak >> '${out}' || true\n`);
  fs.chmodSync(hook, 0o755);
  try {
    await startAttempt('envplain', '', repo);
    const [keys, leaks] = fs.readFileSync(out, 'utf8').split('\n');
    expectNoServerSecrets(keys as string);
    expect(leaks).toBe('0');
  } finally {
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
  }
});
