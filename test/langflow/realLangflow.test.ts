/**
 * Opt-in: Armada against a real LangFlow (`npm run test:langflow`, never part of `npm test`; docs/scheduler.md).
 * scripts/langflow-test.js installs the pinned LangFlow into a venv under the tools dir and runs this file with
 * ARMADA_LANGFLOW_BIN set. The test starts LangFlow on loopback (its own config dir and SQLite file, a superuser
 * from the environment), creates an API key and an echo flow through LangFlow's API, then drives Armada's
 * scheduler against it: a wrong key fails at source creation, a manual run and a scheduled run complete with the
 * flow's output, and a revoked key fails the run with LangFlow's own words. A record of the run is written to
 * ARMADA_LANGFLOW_RECORD (default: langflow-run.json in the OS temp dir).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childEnv } from '../../lib/process/childEnv';
import { startGroupProcess, type GroupProcess } from '../../lib/process/processGroup';
import { eventually, startTestStack, type TestStack } from '../support/harness';
import { LangflowApi } from './langflowApi';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

const BIN = process.env.ARMADA_LANGFLOW_BIN;
const KEY = 'test-api-key-0123456789';
const ECHO = { name: 'Armada Echo', endpoint: 'armada-echo' };
const record: Record<string, unknown> = { date: new Date().toISOString(), steps: {} as Record<string, string> };
const steps = record.steps as Record<string, string>;
const timed = async <T>(step: string, fn: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  try {
    return await fn();
  } finally {
    steps[step] = `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  }
};

let stack: TestStack;
let langflow: GroupProcess;
let api: LangflowApi;
let apiKey: { id: string; api_key: string };
let flow: { id: string; name: string; endpoint_name: string };
let sourceId: string;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-langflow-'));
const output: string[] = [];

jest.setTimeout(15 * 60_000);

beforeAll(async () => {
  if (!BIN) throw new Error('ARMADA_LANGFLOW_BIN is not set: run this test with `npm run test:langflow`');
  const port = await freePort();
  const password = crypto.randomBytes(12).toString('hex');
  langflow = startGroupProcess({
    command: BIN,
    args: ['run', '--host', '127.0.0.1', '--port', String(port), '--backend-only', '--no-open-browser'],
    cwd: dir,
    env: childEnv({
      vars: {
        LANGFLOW_CONFIG_DIR: path.join(dir, 'config'),
        LANGFLOW_DATABASE_URL: `sqlite:///${path.join(dir, 'langflow.db')}`,
        LANGFLOW_AUTO_LOGIN: 'false',
        LANGFLOW_SUPERUSER: 'armada',
        LANGFLOW_SUPERUSER_PASSWORD: password,
        LANGFLOW_SECRET_KEY: crypto.randomBytes(32).toString('base64url'),
        LANGFLOW_CUSTOM_COMPONENT_ADMIN_ONLY: 'true',
        LANGFLOW_DO_NOT_TRACK: 'true',
        DO_NOT_TRACK: 'true',
      },
    }),
    graceMs: 10_000,
    onLine: (_stream, line) => {
      output.push(line);
      if (output.length > 400) output.shift();
    },
  });
  api = new LangflowApi(`http://127.0.0.1:${port}`);
  await timed('LangFlow start to healthy', () =>
    eventually(
      async () => {
        const r = await fetch(`${api.url}/health`, { signal: AbortSignal.timeout(2000) });
        return r.ok && ((await r.json()) as { status?: string }).status === 'ok';
      },
      5 * 60_000,
      1000,
    ).catch((err) => {
      throw new Error(`LangFlow did not become healthy: ${(err as Error).message}\n${output.slice(-40).join('\n')}`);
    }),
  );
  record.langflowVersion = ((await (await fetch(`${api.url}/api/v1/version`)).json()) as { version: string }).version;
  await api.login('armada', password);
  apiKey = await api.createApiKey('armada-test');
  flow = await timed('create the echo flow', () => api.createEchoFlow(ECHO.name, ECHO.endpoint));
  stack = await startTestStack({ services: ['scheduler'], worker: true, file: { scheduler: { healthCheckIntervalSeconds: 0, sourceTimeoutMs: 30_000 } } });
});

afterAll(async () => {
  const client = await stack?.temporal.client();
  await client?.schedule
    .getHandle('schedule:langflow-scheduled')
    .delete()
    .catch(() => undefined);
  await stack?.close();
  await langflow?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
  const file = process.env.ARMADA_LANGFLOW_RECORD ?? path.join(os.tmpdir(), 'langflow-run.json');
  fs.writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  stack.app('scheduler').inject({ method, url, payload: payload as object, headers: { 'x-api-key': KEY } });

interface Execution {
  status: string;
  trigger: string;
  error: string | null;
  tasks: { status: string; output: string; error: string | null }[];
}

async function finished(id: string, timeoutMs = 5 * 60_000): Promise<Execution> {
  return eventually(
    async () => {
      const e = (await inject('GET', `/api/v1/executions/${id}`)).json();
      return e.status !== 'running' && (e as Execution);
    },
    timeoutMs,
    500,
  );
}

describe('Armada against a real LangFlow', () => {
  test('a wrong key fails at source creation with LangFlow\'s message; the right key creates the source', async () => {
    const wrong = await inject('POST', '/api/v1/sources', { name: 'real-langflow', source_type: 'langflow', url: api.url, api_key: 'sk-not-a-real-key' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().detail).toBe('Failed to validate source: the platform refused the API key: GET /api/v1/flows/ answered HTTP 403: {"detail":"Invalid API key"}');
    const ok = await timed('create the source', () => inject('POST', '/api/v1/sources', { name: 'real-langflow', source_type: 'langflow', url: api.url, api_key: apiKey.api_key }));
    expect(ok.statusCode).toBe(201);
    expect(ok.json().version_info).toMatchObject({ version: record.langflowVersion, package: 'Langflow' });
    sourceId = ok.json().id;
  });

  test('the flow list shows the echo flow with its endpoint name, and only the runnable flows', async () => {
    const r = await inject('GET', `/api/v1/sources/${sourceId}/flows`);
    expect(r.statusCode).toBe(200);
    expect(r.json().flows).toEqual([{ id: flow.id, name: ECHO.name, endpoint_name: ECHO.endpoint, description: expect.any(String), updated_at: expect.any(String) }]);
    const all = (await inject('GET', '/api/v1/flows')).json();
    expect(all.flows).toEqual([expect.objectContaining({ source_id: sourceId, source_name: 'real-langflow', id: flow.id })]);
    expect(all.sources).toEqual([expect.objectContaining({ id: sourceId, flows: 1, error: null })]);
  });

  test('a workflow naming the flow by its display name runs it; the flow\'s output is in the execution', async () => {
    const created = await inject('POST', '/api/v1/workflows', {
      name: 'langflow-manual',
      tasks: [{ name: 'echo', type: 'flow', source: 'real-langflow', flow: ECHO.name, input: 'hello from armada' }],
    });
    expect(created.statusCode).toBe(201);
    expect((await inject('GET', '/api/v1/workflows/langflow-manual')).json().tasks[0]).toMatchObject({ flow: flow.id, flowName: ECHO.name });
    const id = (await inject('POST', '/api/v1/workflows/langflow-manual/run')).json().executionId;
    const e = await timed('manual run (first run of the flow)', () => finished(id));
    expect(e).toMatchObject({ status: 'completed', error: null });
    expect(e.tasks[0]?.output).toContain('"text":"hello from armada"');
  });

  test('a schedule fires and runs the flow', async () => {
    const created = await inject('POST', '/api/v1/workflows', {
      name: 'langflow-scheduled',
      schedule: '@every 5s',
      tasks: [{ name: 'echo', type: 'flow', source: sourceId, flow: ECHO.endpoint, input: 'scheduled hello' }],
    });
    expect(created.statusCode).toBe(201);
    const e = await timed('schedule created to a completed scheduled run', async () => {
      const first = await eventually(
        async () => (await inject('GET', '/api/v1/executions?workflow=langflow-scheduled')).json().executions.find((x: { trigger: string }) => x.trigger === 'schedule'),
        60_000,
        500,
      );
      return finished(first.id);
    });
    await inject('POST', '/api/v1/schedules/langflow-scheduled/pause');
    expect(e).toMatchObject({ status: 'completed', trigger: 'schedule' });
    expect(e.tasks[0]?.output).toContain('"text":"scheduled hello"');
  });

  test('a key revoked in LangFlow fails the run with LangFlow\'s words in the error and the log', async () => {
    await api.deleteApiKey(apiKey.id);
    const id = (await inject('POST', '/api/v1/workflows/langflow-manual/run')).json().executionId;
    const e = await finished(id);
    const expected = `Task echo failed: flow ${flow.id} answered HTTP 403: {"detail":"Invalid or missing API key"}`;
    expect(e).toMatchObject({ status: 'failed', error: expected });
    const logs = (await inject('GET', `/api/v1/executions/${id}/logs`)).json().logs.map((l: { message: string }) => l.message);
    expect(logs).toContain(expected);
  });
});
