import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CliIo } from '../../cli/schedulerClient';
import { runSchedules } from '../../cli/schedules';
import { runSources } from '../../cli/sources';
import { runWorkflows } from '../../cli/workflows';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { startServices } from '../../api/services';
import { ACCEPTED_SCHEDULES } from '../../lib/scheduler/cron';
import { logger, startTestStack, type TestStack } from '../support/harness';
import { ARMADA_BIN } from '../support/armadaProcess';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

let stack: TestStack;
let fake: FakeFlowBuilder;
let url: string;
const KEY = 'test-api-key-0123456789';

beforeAll(async () => {
  stack = await startTestStack({ services: ['scheduler'], file: { scheduler: { healthCheckIntervalSeconds: 0 } } });
  url = await stack.app('scheduler').listen({ host: '127.0.0.1', port: 0 });
  fake = await startFakeFlowBuilder();
});
afterAll(async () => {
  await fake.close();
  await stack.close();
});

/** Runs a CLI command in-process against the listening app; returns exit code and output. */
async function cli(run: (argv: string[], io: CliIo) => Promise<number>, argv: string[], env: Record<string, string> = { ARMADA_API_KEY: KEY }, stdin?: CliIo['stdin']) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { env: { ARMADA_SCHEDULER_URL: url, ...env }, stdin, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('armada sources / workflows CLI', () => {
  test('sources add, list, update, health, flows, delete over HTTP', async () => {
    const add = await cli(runSources, ['add', '--type', 'flow-builder', '--url', fake.url, '--name', 'cli-fb', '--api-key', 'secret-k', '--json']);
    expect(add.code).toBe(0);
    const s = JSON.parse(add.stdout);
    expect(s).toMatchObject({ name: 'cli-fb', source_type: 'flow-builder', url: fake.url, has_api_key: true });

    const list = await cli(runSources, ['list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+TYPE\s+STATUS\s+URL\n/);
    expect(list.stdout).toContain(`${s.id}  cli-fb  flow-builder  active  ${fake.url}`);
    expect(list.stdout).toContain('1 of 1 source(s)');

    const upd = await cli(runSources, ['update', s.id, '--status', 'inactive']);
    expect([upd.code, upd.stdout]).toEqual([0, `updated source cli-fb (${s.id}), flow-builder at ${fake.url}, inactive\n`]);
    expect((await cli(runSources, ['list', '--status', 'active'])).stdout).toContain('0 of 0 source(s)');
    // --force is the PATCH's ?force=true (any other query would be a 400)
    const forced = await cli(runSources, ['update', s.id, '--url', `${fake.url}/`, '--force']);
    expect([forced.code, forced.stdout]).toEqual([0, `updated source cli-fb (${s.id}), flow-builder at ${fake.url}, inactive
`]);

    const health = await cli(runSources, ['health', s.id]);
    expect([health.code, health.stdout]).toEqual([0, 'healthy (status inactive)\n']);
    const flows = await cli(runSources, ['flows', s.id]);
    expect(flows.stdout).toMatch(/^ID\s+NAME\s+ENDPOINT\s+UPDATED\s+DESCRIPTION\n/);
    expect(flows.stdout).toContain(`${FAKE_FLOWS.summarise.id}  Summarise  summarise     2026-01-02T03:04:05Z  summarises text`);
    // a source name works wherever an id does
    expect(await cli(runSources, ['flows', 'cli-fb'])).toEqual(flows);
    const byName = await cli(runSources, ['health', 'cli-fb']);
    expect([byName.code, byName.stdout]).toEqual([0, 'healthy (status inactive)\n']);
    const noSuch = await cli(runSources, ['flows', 'no-such-source']);
    expect([noSuch.code, noSuch.stderr]).toEqual([1, 'armada: no source is named "no-such-source" (armada sources list shows them)\n']);
    // without a source: the flows of every source, one list naming the source
    const all = await cli(runSources, ['flows']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^SOURCE\s+ID\s+NAME\s+ENDPOINT\s+UPDATED\s+DESCRIPTION\n/);
    expect(all.stdout).toContain(`cli-fb  ${FAKE_FLOWS.translateV2.id}  Translate  translate-v2`);

    const dup = await cli(runSources, ['add', '--type', 'flow-builder', '--url', `${fake.url}/`]);
    expect([dup.code, dup.stderr]).toEqual([1, `armada: Source with URL ${fake.url} already exists (HTTP 400)\n`]);
    const missing = await cli(runSources, ['delete', '00000000-0000-4000-8000-000000000000']);
    expect([missing.code, missing.stderr]).toEqual([1, 'armada: Source not found (HTTP 404)\n']);
    const del = await cli(runSources, ['delete', s.id]);
    expect([del.code, del.stdout]).toEqual([0, `deleted source ${s.id}\n`]);

    // no key in the environment and none in the (empty) ARMADA_HOME: says which variable to set
    const noKey = await cli(runSources, ['list'], { ARMADA_HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cli-nokey-')) });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/^armada: no scheduler API key: set ARMADA_API_KEY .*api-key.*\n$/);
    const wrongKey = await cli(runSources, ['list'], { ARMADA_API_KEY: 'wrong' });
    expect([wrongKey.code, wrongKey.stderr]).toEqual([1, 'armada: Invalid API key (HTTP 401)\n']);
  });

  test('workflows list and run', async () => {
    const created = await stack.app('scheduler').inject({
      method: 'POST',
      url: '/api/v1/workflows',
      headers: { 'x-api-key': KEY },
      payload: { name: 'cli-wf', schedule: '0 6 * * 1-5', timezone: 'Europe/Berlin', tasks: [{ name: 'a', type: 'script', script: 'true' }] },
    });
    expect(created.statusCode).toBe(201);
    const list = await cli(runWorkflows, ['list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^NAME\s+SCHEDULE\s+TIMEZONE/);
    expect(list.stdout).toMatch(/cli-wf\s+0 6 \* \* 1-5\s+Europe\/Berlin\s+true\s+1\s+-\s+\d{4}-/);
    const run = await cli(runWorkflows, ['run', 'cli-wf', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ workflow: 'cli-wf', status: 'running' });
    const nope = await cli(runWorkflows, ['run', 'nope']);
    expect([nope.code, nope.stderr]).toEqual([1, 'armada: Workflow not found (HTTP 404)\n']);
    const client = await stack.temporal.client();
    await client.workflow.getHandle(`execution:${JSON.parse(run.stdout).executionId}`).terminate('test over');
    await client.schedule.getHandle('schedule:cli-wf').delete();
  });

  test('workflows retry re-runs a finished execution; 409 while it runs', async () => {
    await stack.app('scheduler').inject({
      method: 'POST',
      url: '/api/v1/workflows',
      headers: { 'x-api-key': KEY },
      payload: { name: 'cli-retry', tasks: [{ name: 'a', type: 'script', script: 'true' }] },
    });
    const run = JSON.parse((await cli(runWorkflows, ['run', 'cli-retry', '--json'])).stdout);
    const busy = await cli(runWorkflows, ['retry', run.executionId]);
    expect([busy.code, busy.stderr]).toEqual([1, `armada: Execution ${run.executionId} is still running (HTTP 409)\n`]);
    const client = await stack.temporal.client();
    await client.workflow.getHandle(`execution:${run.executionId}`).terminate('test over');
    // this stack has no worker: the projection is set to what the run would have recorded
    await stack.db.query(`UPDATE scheduler_executions SET status = 'failed', completed_at = now() WHERE id = $1`, [run.executionId]);
    const retry = await cli(runWorkflows, ['retry', run.executionId]);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toMatch(new RegExp(`^started execution [0-9a-f-]{36} of cli-retry \\(retry of ${run.executionId}\\)\n$`));
    const retried = retry.stdout.split(' ')[2] as string;
    await client.workflow.getHandle(`execution:${retried}`).terminate('test over');
    const missing = await cli(runWorkflows, ['retry', '00000000-0000-4000-8000-000000000000']);
    expect([missing.code, missing.stderr]).toEqual([1, 'armada: Execution not found (HTTP 404)\n']);
    // a usage error reaches the caller's stderr as one line (not the help, not a throw)
    const usage = await cli(runWorkflows, ['retry']);
    expect([usage.code, usage.stdout, usage.stderr]).toEqual([2, '', 'armada workflows retry: the EXECUTION_ID is required; run armada workflows --help\n']);
    const badOption = await cli(runWorkflows, ['retry', '--bogus']);
    expect([badOption.code, badOption.stdout, badOption.stderr]).toEqual([2, '', "armada workflows: unknown option '--bogus'; run armada workflows --help\n"]);
  });

  test('workflows logs prints every line of an execution, across pages, oldest first; --level and --json', async () => {
    await stack.app('scheduler').inject({ method: 'POST', url: '/api/v1/workflows', headers: { 'x-api-key': KEY }, payload: { name: 'cli-logs', tasks: [{ name: 'a', type: 'script', script: 'true' }] } });
    const run = JSON.parse((await cli(runWorkflows, ['run', 'cli-logs', '--json'])).stdout);
    await (await stack.temporal.client()).workflow.getHandle(`execution:${run.executionId}`).terminate('test over');
    // no worker here: 10,005 lines as a run would have written them (more than one page of 10,000), every 1,000th a warning
    await stack.db.query(
      `INSERT INTO scheduler_execution_logs (execution_id, key, ts, level, message)
       SELECT $1, 'test:' || n, timestamptz '2026-01-01T00:00:00Z' + n * interval '1 ms', CASE WHEN n % 1000 = 0 THEN 'warning' ELSE 'info' END, 'line ' || n
         FROM generate_series(1, 10005) n`,
      [run.executionId],
    );
    const all = await cli(runWorkflows, ['logs', run.executionId]);
    expect([all.code, all.stderr]).toEqual([0, '']);
    const lines = all.stdout.trimEnd().split('\n').filter((l) => / line \d+$/.test(l));
    expect(lines).toHaveLength(10_005);
    expect(lines[0]).toBe('2026-01-01T00:00:00.001Z INFO    line 1');
    expect(lines[10_004]).toBe('2026-01-01T00:00:10.005Z INFO    line 10005');
    expect(lines.map((l) => Number(l.split(' line ')[1]))).toEqual(Array.from({ length: 10_005 }, (_, i) => i + 1));
    const warnings = await cli(runWorkflows, ['logs', run.executionId, '--level', 'warning', '--json']);
    expect(warnings.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)).filter((l) => l.message.startsWith('line '))).toEqual(
      Array.from({ length: 10 }, (_, i) => ({ timestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + (i + 1) * 1000).toISOString(), level: 'warning', message: `line ${(i + 1) * 1000}` })),
    );
    const elsewhere = await cli(runWorkflows, ['list', '--level', 'error']);
    expect([elsewhere.code, elsewhere.stderr]).toEqual([2, 'armada workflows list: --level is an option of armada workflows logs; run armada workflows --help\n']);
    const bad = await cli(runWorkflows, ['logs', run.executionId, '--level', 'warn']);
    expect([bad.code, bad.stderr]).toEqual([2, 'armada workflows logs: --level must be one of debug, info, warning, error; run armada workflows --help\n']);
    const missing = await cli(runWorkflows, ['logs', '00000000-0000-4000-8000-000000000000']);
    expect([missing.code, missing.stderr]).toEqual([1, 'armada: Execution not found (HTTP 404)\n']);
  });

  test('schedules add (cron and one-time), list, pause, resume, delete by id', async () => {
    await stack.app('scheduler').inject({
      method: 'POST',
      url: '/api/v1/workflows',
      headers: { 'x-api-key': KEY },
      payload: { name: 'cli-sched', tasks: [{ name: 'a', type: 'script', script: 'true' }] },
    });
    const cron = await cli(runSchedules, ['add', 'cli-sched', '--cron', '0 3 1 1 *', '--timezone', 'Asia/Kolkata', '--input', '{"k":1}', '--json']);
    expect(cron.code).toBe(0);
    const c = JSON.parse(cron.stdout);
    expect(c).toMatchObject({ workflow: 'cli-sched', type: 'cron', schedule: '0 3 1 1 *', timezone: 'Asia/Kolkata', input: { k: 1 }, status: 'active' });
    const once = await cli(runSchedules, ['add', 'cli-sched', '--at', '2099-01-01T09:30', '--timezone', 'Asia/Kolkata', '--input', 'plain text', '--paused']);
    expect(once.code).toBe(0);
    expect(once.stdout).toMatch(/^added one-time schedule [0-9a-f-]{36} to cli-sched\n$/);
    const list = await cli(runSchedules, ['list', '--workflow', 'cli-sched']);
    expect(list.stdout).toMatch(/^ID\s+WORKFLOW\s+TYPE\s+WHEN\s+TIMEZONE\s+STATUS\s+NEXT RUN\s+INPUT\n/);
    expect(list.stdout).toMatch(new RegExp(`${c.id}\\s+cli-sched\\s+cron\\s+0 3 1 1 \\*\\s+Asia/Kolkata\\s+active\\s+\\d{4}-\\S+\\s+\\{"k":1\\}`));
    expect(list.stdout).toMatch(/cli-sched\s+one-time\s+2099-01-01T09:30\s+Asia\/Kolkata\s+paused\s+-\s+"plain text"/);
    expect((await cli(runSchedules, ['pause', c.id])).stdout).toBe(`paused schedule ${c.id} of cli-sched\n`);
    const client = await stack.temporal.client();
    expect((await client.schedule.getHandle(`schedule:cli-sched:${c.id}`).describe()).state.paused).toBe(true);
    expect((await cli(runSchedules, ['resume', c.id])).stdout).toBe(`resumed schedule ${c.id} of cli-sched\n`);
    expect((await cli(runSchedules, ['delete', c.id])).stdout).toBe(`deleted schedule ${c.id} of cli-sched\n`);
    await expect(client.schedule.getHandle(`schedule:cli-sched:${c.id}`).describe()).rejects.toThrow();
    const gone = await cli(runSchedules, ['pause', c.id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('Schedule not found');
    const both = await cli(runSchedules, ['add', 'cli-sched', '--cron', '* * * * *', '--at', 'now']);
    expect(both.code).toBe(2);
    const badAt = await cli(runSchedules, ['add', 'cli-sched', '--at', '2001-01-01T00:00']);
    expect([badAt.code, badAt.stderr]).toEqual([1, expect.stringMatching(/^armada: Time "2001-01-01T00:00" is in the past .* \(HTTP 400\)\n$/)]);
    // a seconds field is no accepted form (docs/scheduler.md#schedule-expressions): the scheduler's 400 says why and what is
    const seconds = await cli(runSchedules, ['add', 'cli-sched', '--cron', '* * * * * * *']);
    expect([seconds.code, seconds.stderr]).toEqual([1, `armada: Invalid cron expression "* * * * * * *": it has 7 fields: a first field of seconds and a last of years are not accepted; ${ACCEPTED_SCHEDULES} (HTTP 400)\n`]);
    expect((await stack.app('scheduler').inject({ method: 'DELETE', url: '/api/v1/workflows/cli-sched', headers: { 'x-api-key': KEY } })).statusCode).toBe(200);
  });

  test("without ARMADA_SCHEDULER_URL and ARMADA_API_KEY it uses armada start's: ARMADA_SCHEDULER_PORT and $ARMADA_HOME/api-key", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cli-home-'));
    fs.writeFileSync(path.join(home, 'api-key'), `${KEY}\n`, { mode: 0o600 });
    const list = await cli(runSources, ['list'], { ARMADA_SCHEDULER_URL: '', ARMADA_HOME: home, ARMADA_HOST: '127.0.0.1', ARMADA_SCHEDULER_PORT: new URL(url).port });
    expect([list.code, list.stderr]).toEqual([0, '']);
    expect(list.stdout).toMatch(/source\(s\)/);
    // nothing listens there: the error names the URL and the variable to set
    const closed = `http://127.0.0.1:${await freePort()}`;
    const down = await cli(runWorkflows, ['list'], { ARMADA_SCHEDULER_URL: closed, ARMADA_API_KEY: KEY });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(new RegExp(`^armada: cannot reach the scheduler at ${closed}: ECONNREFUSED; .*set ARMADA_SCHEDULER_URL`));
  });

  test('a redirect to another origin is one line naming the status and that origin, exit 1; nothing is sent there', async () => {
    const http = require('node:http') as typeof import('node:http');
    // the same server under another name (localhost, not 127.0.0.1): another origin, so whether it was asked is seen here
    const seen: { url: string; key: string | undefined }[] = [];
    const front = http.createServer((req, res) => {
      seen.push({ url: req.url ?? '', key: req.headers['x-api-key'] as string | undefined });
      if (req.url?.startsWith('/landed')) return void res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
      res.writeHead(302, { location: `http://localhost:${(front.address() as import('node:net').AddressInfo).port}/landed${req.url}` }).end();
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    const frontUrl = `http://127.0.0.1:${(front.address() as import('node:net').AddressInfo).port}`;
    try {
      const r = await cli(runSources, ['list'], { ARMADA_SCHEDULER_URL: frontUrl, ARMADA_API_KEY: KEY });
      // before, followed without the key and its answer read as the scheduler's: here a TypeError and its stack
      expect(r).toEqual({
        code: 1,
        stdout: '',
        stderr: `armada: the scheduler at ${frontUrl} answered GET /api/v1/sources with HTTP 302, a redirect to another origin (http://localhost:${new URL(frontUrl).port}), which is not followed: armada calls the scheduler's own origin only; if the scheduler has moved there, set ARMADA_SCHEDULER_URL to its URL\n`,
      });
      expect(seen).toEqual([{ url: '/api/v1/sources', key: KEY }]);
    } finally {
      await new Promise((r) => front.close(r));
    }
  });

  test("a 2xx answer that is not the scheduler's (a proxy's page, another JSON API) is one line saying so, exit 1, no stack", async () => {
    const http = require('node:http') as typeof import('node:http');
    const answers: Record<string, [string, string]> = {
      '/api/v1/sources': ['text/html', '<html><body>Welcome to nginx!</body></html>'],
      '/api/v1/workflows': ['application/json', '{"workflows":{"a":1}}'],
      '/api/v1/schedules': ['application/json', '[]'],
    };
    const other = http.createServer((req, res) => {
      const [type, body] = answers[(req.url ?? '').split('?')[0] as string] ?? ['application/json', '{}'];
      res.writeHead(200, { 'content-type': type }).end(body);
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherUrl = `http://127.0.0.1:${(other.address() as import('node:net').AddressInfo).port}`;
    const advice = 'check that ARMADA_SCHEDULER_URL (or ARMADA_HOST and ARMADA_SCHEDULER_PORT) names the Armada scheduler, of the same version as this armada\n';
    try {
      const env = { ARMADA_SCHEDULER_URL: otherUrl, ARMADA_API_KEY: KEY };
      // before: TypeErrors (page.items undefined, workflows.map not a function) and their stacks
      expect(await cli(runSources, ['list'], env)).toEqual({
        code: 1,
        stdout: '',
        stderr: `armada: the answer to GET /api/v1/sources from ${otherUrl} (HTTP 200, text/html) is not the scheduler's: not a JSON object; ${advice}`,
      });
      expect(await cli(runWorkflows, ['list'], env)).toEqual({
        code: 1,
        stdout: '',
        stderr: `armada: the answer to GET /api/v1/workflows from ${otherUrl} (HTTP 200, application/json) is not the scheduler's: no "workflows" list in it; ${advice}`,
      });
      expect(await cli(runSchedules, ['list'], env)).toEqual({
        code: 1,
        stdout: '',
        stderr: `armada: the answer to GET /api/v1/schedules from ${otherUrl} (HTTP 200, application/json) is not the scheduler's: not a JSON object; ${advice}`,
      });
    } finally {
      await new Promise((r) => other.close(r));
    }
  });

  test('sources add --api-key KEY: while it runs, its command line (ps, /proc/<pid>/cmdline) shows the key as ***', async () => {
    const http = require('node:http') as typeof import('node:http');
    // a platform that never answers: the scheduler's validation waits on it, and the command on the scheduler
    const silent = http.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const platform = `http://127.0.0.1:${(silent.address() as import('node:net').AddressInfo).port}`;
    const child = spawn(process.execPath, [ARMADA_BIN, 'sources', 'add', '--type', 'flow-builder', '--url', platform, '--api-key', 'cli-secret-key-123456'], {
      env: { ...process.env, ARMADA_SCHEDULER_URL: url, ARMADA_API_KEY: KEY },
      stdio: 'ignore',
    });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const cmdline = await (async () => {
        for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
          const text = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8');
          if (text.includes('sources add') && text.includes('***')) return text;
        }
        throw new Error('the command line never showed the key masked');
      })();
      expect(cmdline).toContain('--api-key ***');
      expect(cmdline).not.toContain('cli-secret-key-123456');
    } finally {
      child.kill('SIGKILL');
      await exited;
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });

  test('sources add|update --api-key-file reads the key from stdin or a file (on no command line); the platform gets it as given', async () => {
    const fromStdin = 'stdin-key-0123456789';
    const fromFile = 'file-key-9876543210';
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cli-keyfile-'));
    fake.requiredKey = fromStdin; // the platform now takes this key only
    let id: string | undefined;
    try {
      // the real executable, the key piped in with the line break `echo` or a password manager ends it with
      const child = spawn(process.execPath, [ARMADA_BIN, 'sources', 'add', '--type', 'flow-builder', '--url', fake.url, '--name', 'cli-keyfile', '--api-key-file', '-', '--json'], {
        env: { ...process.env, ARMADA_SCHEDULER_URL: url, ARMADA_API_KEY: KEY },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const closed = new Promise((r) => child.once('close', r));
      child.stdin.end(`${fromStdin}\n`);
      expect([await closed, stderr]).toEqual([0, '']);
      id = JSON.parse(stdout).id as string;
      // listed by the API with the key masked: has_api_key, never the key
      const listed = await fetch(`${url}/api/v1/sources?limit=100`, { headers: { 'x-api-key': KEY } });
      const text = await listed.text();
      expect(JSON.parse(text).items.find((i: { id: string }) => i.id === id)).toMatchObject({ name: 'cli-keyfile', has_api_key: true });
      expect(text).not.toContain(fromStdin);
      // the key stored is the one given, without its line break: the platform answers the flow list sent with it
      const lastFlowsKey = () => fake.requests.filter((r) => r.path === '/api/v1/flows/').at(-1)?.apiKey;
      expect((await cli(runSources, ['flows', 'cli-keyfile'])).code).toBe(0);
      expect(lastFlowsKey()).toBe(fromStdin);
      // a file (CRLF and all) replaces it
      fs.writeFileSync(path.join(dir, 'key'), `${fromFile}\r\n`, { mode: 0o600 });
      fake.requiredKey = fromFile;
      expect((await cli(runSources, ['update', 'cli-keyfile', '--api-key-file', path.join(dir, 'key')])).code).toBe(0);
      expect((await cli(runSources, ['flows', 'cli-keyfile'])).code).toBe(0);
      expect(lastFlowsKey()).toBe(fromFile);
      // what cannot be a key stops the command before anything is sent (exit 2), naming the file
      fs.writeFileSync(path.join(dir, 'two'), 'line-one\nline-two\n');
      fs.writeFileSync(path.join(dir, 'empty'), '\n');
      const refused = async (file: string) => cli(runSources, ['update', 'cli-keyfile', '--api-key-file', file]);
      expect(await refused(path.join(dir, 'two'))).toEqual({ code: 2, stdout: '', stderr: `armada: --api-key-file ${path.join(dir, 'two')}: it holds more than one line; give a file that holds only the key\n` });
      expect(await refused(path.join(dir, 'empty'))).toEqual({ code: 2, stdout: '', stderr: `armada: --api-key-file ${path.join(dir, 'empty')}: it holds no key (to clear a source's key, give --api-key "")\n` });
      expect(await refused(path.join(dir, 'missing'))).toMatchObject({ code: 2, stderr: expect.stringMatching(/^armada: --api-key-file \S+missing: cannot read it \(ENOENT: /) });
      expect(await refused(dir)).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^armada: --api-key-file \S+: cannot read it \(EISDIR: /) });
      fs.writeFileSync(path.join(dir, 'large'), 'k'.repeat(16 * 1024 + 1));
      expect(await refused(path.join(dir, 'large'))).toEqual({ code: 2, stdout: '', stderr: `armada: --api-key-file ${path.join(dir, 'large')}: more than 16384 bytes, longer than any key; give a file that holds only the key\n` });
      // a terminal as stdin would show the key as it is typed: refused before anything is read
      const terminal = Object.assign(Readable.from([]), { isTTY: true });
      expect(await cli(runSources, ['update', 'cli-keyfile', '--api-key-file', '-'], undefined, terminal)).toEqual({
        code: 2,
        stdout: '',
        stderr: 'armada: --api-key-file -: stdin is a terminal, which would show the key as it is typed; pipe the key in (… | armada sources …) or give a file\n',
      });
      const both = await cli(runSources, ['update', 'cli-keyfile', '--api-key', 'k', '--api-key-file', path.join(dir, 'key')]);
      expect([both.code, both.stderr]).toEqual([2, 'armada sources update: give --api-key-file or --api-key, not both; run armada sources --help\n']);
      expect((await cli(runSources, ['flows', 'cli-keyfile'])).code).toBe(0);
      expect(lastFlowsKey()).toBe(fromFile); // unchanged
    } finally {
      fake.requiredKey = null;
      if (id) await cli(runSources, ['delete', id]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test('--help works from the real executable', async () => {
    const bin = ARMADA_BIN;
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'sources', '--help']);
    expect(stdout).toContain('armada sources list');
    const wf = await promisify(execFile)(process.execPath, [bin, 'workflows', '--help']);
    expect(wf.stdout).toContain('armada workflows run NAME');
    expect(wf.stdout).toContain('armada workflows retry EXECUTION_ID');
    const sched = await promisify(execFile)(process.execPath, [bin, 'schedules', '--help']);
    expect(sched.stdout).toContain('armada schedules add WORKFLOW --at now|DATETIME');
    const top = await promisify(execFile)(process.execPath, [bin, '--help']);
    expect(top.stdout).toContain('sources list|add|update|delete|health|flows');
    expect(top.stdout).toContain('schedules list|add|pause|resume|delete');
  });

  test('the scheduler serves every route on both of its ports', async () => {
    const config = { ...stack.config, host: '127.0.0.1', ports: { ...stack.config.ports, scheduler: 0, schedulerAlt: 0 } };
    const running = await startServices(['scheduler'], { db: stack.db, config, keys: stack.keys, temporal: stack.temporal, logger, metrics: stack.metrics });
    try {
      expect(Object.keys(running.addresses).sort()).toEqual(['scheduler', 'scheduler-alt']);
      for (const base of Object.values(running.addresses)) {
        for (const p of ['/api/v1/sources', '/api/v1/workflows', '/api/v1/schedules', '/api/v1/executions']) {
          const r = await fetch(`${base}${p}`, { headers: { 'x-api-key': KEY } });
          expect([p, r.status]).toEqual([p, 200]);
        }
        expect((await fetch(`${base}/api/v1/workflows`)).status).toBe(401);
      }
    } finally {
      await running.close();
    }
  });
});
