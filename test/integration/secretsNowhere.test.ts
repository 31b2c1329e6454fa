/**
 * The promise "no secrets in logs, in child processes' environments, in HTTP answers or on the board", checked the
 * way an outside tester would: a distinct marker (`sekret-<name>-<random>`) is planted wherever a secret can be
 * configured, the normal and the error paths are exercised against real processes (`armada api` with its four
 * services and `armada worker`, against a PostgreSQL of this file's own whose password is a marker), and every output
 * is searched for every marker, as it is, base64- and URL-encoded:
 *
 * - secrets: the four services' API keys and the default one, a `users[].apiKey`, the encryption key, the DATABASE_URL
 *   password, a code-host token (the loopback code-host double's device flow), a scheduler source's API key (a loopback
 *   fake platform), a webhook secret, repository credentials in a clone URL (the loopback git smart-HTTP server), a
 *   vendor key and a `*_TOKEN` in the server's environment, OPENAPI_API_KEY, and a literal of an agent profile's `env`;
 * - paths: every service with no key, a wrong key and the right one (401s), the platform answering 500 and down, a
 *   clone whose remote refuses the credentials, a webhook receiver answering 500, PostgreSQL stopped (503s), a
 *   scheduler run whose flow fails, an attempt whose agent prints its environment, a setup script and a scheduler
 *   script printing theirs, the environ of the agent while it runs (/proc/<pid>/environ);
 * - outputs: every byte each process wrote (stdout and stderr), every HTTP answer's body and headers, each service's
 *   /metrics and OpenAPI document, the attempt's and the execution's logs as the API answers them.
 *
 * A marker may appear only where it must: in a request that carries it, in the one answer that hands out the code-host
 * token (the device flow's poll), and in what an agent sees of its profile's `env` (docs/security.md#child-environment).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ARMADA_BIN } from '../support/armadaProcess';
import { startFakeCodehost, type FakeCodehost } from '../support/fakeCodehost';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import { startGitHttpServer, type GitHttpServer } from '../support/gitHttpServer';
import { env, eventually, makeGitRepo } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(600_000);

const ENV_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'env-agent.js');
const tag = crypto.randomBytes(4).toString('hex');
const MULTI_AGENT = `envdump-${tag}`;
const marker = (name: string) => `sekret-${name}-${tag}`;
/** Every secret planted, by name; the code-host token (the double's own) is added once the double runs. */
const SECRETS: Record<string, string> = {
  db: marker('db'),
  defaultKey: marker('default'),
  taskKey: marker('task'),
  schedulerKey: marker('scheduler'),
  agentsKey: marker('agents'),
  tracesKey: marker('traces'),
  userKey: marker('user'),
  encryption: marker('encryption'),
  repo: marker('repo'),
  badRepo: marker('badrepo'),
  echoedRepo: marker('echoedrepo'),
  source: marker('source'),
  echoedSource: marker('echoed'),
  sourceUrl: marker('sourceurl'),
  webhook: marker('webhook'),
  vendor: marker('vendor'),
  envToken: marker('envtoken'),
  openapi: marker('openapi'),
  wrongKey: marker('wrong'),
  refusedDb: marker('refuseddb'),
  goneDb: marker('gonedb'),
  profile: marker('profile'),
};
const S = SECRETS;

/** The forms a marker may take in an output: as it is, base64 of it (and of `user:marker`), URL-encoded. */
function forms(secret: string): string[] {
  return [secret, Buffer.from(secret).toString('base64'), Buffer.from(`alice:${secret}`).toString('base64'), encodeURIComponent(secret), Buffer.from(secret).toString('hex')];
}
/** The names of the markers `text` holds in any form. */
function markersIn(text: string, except: string[] = []): string[] {
  return Object.entries(SECRETS)
    .filter(([name, secret]) => !except.includes(name) && forms(secret).some((f) => text.includes(f)))
    .map(([name]) => name);
}

/**
 * What docs/security.md#child-environment lets a child see: the allow-list, what a shell sets itself (PWD, SHLVL, _,
 * OLDPWD), the test profile's env and the contract variables of agents, setup scripts and scheduler scripts.
 */
const DOCUMENTED_CHILD_ENV =
  /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_\w+|TERM|COLORTERM|NO_COLOR|TZ|TMPDIR|TMP|TEMP|XDG_(CONFIG|CACHE|DATA|STATE)_HOME|XDG_RUNTIME_DIR|GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL)|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy|SSL_CERT_FILE|SSL_CERT_DIR|NODE_EXTRA_CA_CERTS|PWD|OLDPWD|SHLVL|_|PROFILE_TOKEN|ARMADA_(PROMPT|TASK_ID|ATTEMPT_ID|PROCESS_ID|WORKTREE|MODEL|SETUP_ID|EXECUTION_ID|TASK_INDEX))$/;

interface Proc {
  child: ChildProcess;
  out: () => string;
}

/** `armada <args>` with `vars`, all it writes kept; resolves once it prints the JSON line whose `event` is `ready`. */
function spawnArmada(args: string[], ready: string, vars: NodeJS.ProcessEnv): Promise<Proc> {
  const child = spawn(process.execPath, [ARMADA_BIN, ...args], { env: vars, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stderr?.on('data', (d: Buffer) => (out += d.toString('latin1')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`armada ${args[0]} did not start: ${out.slice(-4000)}`));
    }, 180_000);
    child.once('exit', (code) => reject(new Error(`armada ${args[0]} exited ${code}: ${out.slice(-4000)}`)));
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString('latin1');
      if (out.includes(`"event":"${ready}"`)) {
        clearTimeout(timer);
        resolve({ child, out: () => out });
      }
    });
  });
}

async function stopProc(p: Proc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGINT');
  const killer = setTimeout(() => p.child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(killer);
}

const startedAt = new Date().toISOString();
let home: string;
let pg: OwnPostgres;
let api: Proc;
let worker: Proc;
/** The environment of both processes. */
let vars: NodeJS.ProcessEnv;
/** The project cloned with credentials from the remote that refuses pushes. */
let goodProjectId: string;
/** What the processes started with a DATABASE_URL PostgreSQL refuses (or of no server) wrote. */
const badDatabaseOutputs: { what: string; out: string }[] = [];
/** `armada migrate` and `armada api` with bad DATABASE_URLs (runWithBadDatabases), started by beforeAll. */
let badDatabaseRuns: Promise<void> = Promise.resolve();
let codehost: FakeCodehost;
let platform: FakeFlowBuilder;
let gitServer: GitHttpServer;
let receiver: http.Server;
/** A platform that passes requests to `platform` until `echoing`, then answers each with a 500 naming the key it got. */
let echoPlatform: http.Server;
let echoing = false;
/** A git remote over HTTP that refuses every request with credentials, quoting them (git prints it: `remote: …`). */
let echoRemote: http.Server;
/** In front of the git server: fetches and clones pass, a push is refused with a 403 quoting the credentials. */
let pushRefuser: http.Server;
let pushRefuserUrl: string;
let echoUrl: string;
let receiverUrl: string;
const receiverBodies: string[] = [];
const ports: Record<string, number> = {};
const base = (service: string) => `http://127.0.0.1:${ports[service]}`;

/** Every answer collected: what was asked (for the report), the status, the headers and the body. */
const answers: { what: string; status: number; headers: string; body: string; allowed: string[] }[] = [];
/** Markers found in the children's environments (/proc/<pid>/environ) while they ran, by pid and command. */
const environs: { cmd: string; found: string[] }[] = [];

/**
 * One request to a service; the answer is kept for the search. `allowed`: the markers this answer may hold (the
 * code-host token in the device flow's poll).
 */
async function call(
  service: string,
  method: string,
  url: string,
  opts: { key?: string | null; body?: unknown; allowed?: string[] } = {},
): Promise<{ status: number; body: string; json: () => ReturnType<typeof JSON.parse> }> {
  const headers: Record<string, string> = {};
  const key = opts.key === undefined ? (service === 'task' ? S.taskKey : S[`${service}Key`]) : opts.key;
  if (key) {
    if (service === 'task') headers.authorization = `Bearer ${key}`;
    else headers['x-api-key'] = key;
  }
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base(service)}${url}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const body = await res.text();
  answers.push({ what: `${service} ${method} ${url.replace(/access_token=[^&]*/, 'access_token=…')} → ${res.status}`, status: res.status, headers: JSON.stringify([...res.headers]), body, allowed: opts.allowed ?? [] });
  return { status: res.status, body, json: () => JSON.parse(body) };
}

/** The pids below `pid`, from /proc. */
function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
      children.push(
        ...fs
          .readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8')
          .trim()
          .split(/\s+/)
          .filter(Boolean)
          .map(Number),
      );
    }
  } catch {
    return [];
  }
  children = [...new Set(children)];
  return children.flatMap((c) => [c, ...descendants(c)]);
}

/** Reads the environ of every process below the worker that carries `variable` (a child Armada started). */
function sampleEnvirons(variable: string): number {
  let seen = 0;
  for (const pid of descendants(worker.child.pid as number)) {
    let environ: string;
    let cmd: string;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    if (!environ.split('\0').some((v) => v.startsWith(`${variable}=`))) continue;
    seen++;
    // the profile's literal is the agent's by design; the command line is searched too
    environs.push({ cmd, found: markersIn(environ, ['profile']) });
    environs.push({ cmd: `cmdline of ${cmd}`, found: markersIn(cmd) });
  }
  return seen;
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'pipe' }).toString().trim();

beforeAll(async () => {
  home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-secrets-')));
  // the embedded PostgreSQL takes its password from this file when it exists (lib/runtime/embeddedPostgres.ts)
  fs.writeFileSync(path.join(home, 'pg-password'), `${S.db}\n`, { mode: 0o600 });
  pg = await startOwnPostgres(path.join(home, 'pg'));
  expect(pg.url).toContain(S.db);

  // a private repository behind Basic auth whose password is a marker
  const bare = path.join(home, 'srv', 'acme', 'widgets.git');
  fs.mkdirSync(path.dirname(bare), { recursive: true });
  git(home, 'init', '-q', '--bare', '-b', 'main', bare);
  const seed = makeGitRepo();
  git(seed, 'push', '-q', bare, 'main');
  gitServer = await startGitHttpServer(path.join(home, 'srv'), 'alice', S.repo);

  codehost = await startFakeCodehost([{ owner: 'acme', name: 'widgets', bare, defaultBranch: 'main', private: true }]);
  SECRETS.codehost = codehost.token;
  platform = await startFakeFlowBuilder();
  platform.requiredKey = S.source;
  echoPlatform = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const key = String(req.headers['x-api-key'] ?? '');
      if (echoing) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: `no flows for x-api-key ${key} (${Buffer.from(key).toString('base64')})` }));
        return;
      }
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      fetch(`${platform.url}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json', 'x-api-key': key }, body })
        .then(async (r) => res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text()))
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((r) => echoPlatform.listen(0, '127.0.0.1', r));
  echoUrl = `http://127.0.0.1:${(echoPlatform.address() as AddressInfo).port}`;
  echoRemote = http.createServer((req, res) => {
    const auth = req.headers.authorization;
    if (!auth) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"', 'content-type': 'text/plain' }).end('authentication required\n');
      return;
    }
    const decoded = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString();
    res.writeHead(403, { 'content-type': 'text/plain' }).end(`refused ${auth} (${decoded})\n`);
  });
  await new Promise<void>((r) => echoRemote.listen(0, '127.0.0.1', r));
  pushRefuser = http.createServer((req, res) => {
    if ((req.url ?? '').includes('git-receive-pack')) {
      const auth = req.headers.authorization ?? '';
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`no pushes for ${auth} (${Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString()})\n`);
      return;
    }
    const up = http.request(`${gitServer.url}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => pushRefuser.listen(0, '127.0.0.1', r));
  pushRefuserUrl = `http://127.0.0.1:${(pushRefuser.address() as AddressInfo).port}`;
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      receiverBodies.push(`${JSON.stringify(req.headers)}\n${body}`);
      res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver broke');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const configPath = path.join(home, 'config.json');
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      users: [{ email: 'alice@example.com', apiKey: S.userKey }],
      agents: {
        envdump: {
          command: [process.execPath, ENV_AGENT],
          format: 'text',
          env: { PROFILE_TOKEN: S.profile, ENV_SHOW: 'PROFILE_TOKEN,DATABASE_URL,ARMADA_TASK_API_KEY,ANTHROPIC_API_KEY' },
        },
        // prints its whole environment, then stays a while so that its /proc/<pid>/environ can be read
        // changes a file, so that create-pr has something to push
        edit: { command: ['sh', '-c', 'cat >/dev/null; echo changed > secrets-edit.txt'], format: 'text' },
        printenv: { command: ['sh', '-c', 'cat >/dev/null; env; sleep 4'], format: 'text', env: { PROFILE_TOKEN: S.profile } },
      },
      multiAgent: { agents: [{ name: MULTI_AGENT, role: 'inspector', llm: 'envdump' }] },
      scheduler: { healthCheckIntervalSeconds: 0 },
      attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000 },
      codehost: { pollIntervalMs: 300 },
      // the two clones that cannot succeed fail after five tries 0.2-1.6 s apart instead of 2-16 s (~30 s)
      projects: { cloneRetryInitialIntervalMs: 200 },
    }),
  );
  for (const s of ['task', 'scheduler', 'agents', 'traces']) ports[s] = await freePort();
  vars = {
    ...process.env,
    ARMADA_HOME: home,
    ARMADA_CONFIG: configPath,
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: env('ARMADA_TEST_TEMPORAL_ADDRESS'),
    ARMADA_TASK_QUEUE: `secrets-${tag}`,
    ARMADA_API_KEY: S.defaultKey,
    ARMADA_TASK_API_KEY: S.taskKey,
    ARMADA_SCHEDULER_API_KEY: S.schedulerKey,
    ARMADA_AGENTS_API_KEY: S.agentsKey,
    ARMADA_TRACES_API_KEY: S.tracesKey,
    ARMADA_ENCRYPTION_KEY: S.encryption,
    ANTHROPIC_API_KEY: S.vendor,
    GITHUB_TOKEN: S.envToken,
    OPENAPI_API_KEY: S.openapi,
    ARMADA_CODEHOST_API_URL: codehost.url,
    ARMADA_CODEHOST_OAUTH_URL: `${codehost.url}/`,
    ARMADA_CODEHOST_CLIENT_ID: codehost.clientId,
    ARMADA_TASK_PORT: String(ports.task),
    ARMADA_SCHEDULER_PORT: String(ports.scheduler),
    ARMADA_AGENTS_PORT: String(ports.agents),
    ARMADA_TRACES_PORT: String(ports.traces),
    ARMADA_SCHEDULER_ALT_PORT: '',
    ARMADA_TEMPORAL_METRICS_PORT: '',
    ARMADA_LOG_LEVEL: 'debug',
    ARMADA_LOG_FORMAT: 'json',
  };
  api = await spawnArmada(['api'], 'listening', vars);
  worker = await spawnArmada(['worker'], 'worker-started', vars);
  badDatabaseRuns = runWithBadDatabases();
  badDatabaseRuns.catch(() => undefined); // its test reports it
}, 400_000);

afterAll(async () => {
  await terminateActor().catch(() => undefined);
  if (process.env.ARMADA_TEST_SECRETS_DUMP) {
    // for a look by hand: what was searched
    const dir = process.env.ARMADA_TEST_SECRETS_DUMP;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'secrets.json'), JSON.stringify(SECRETS, null, 1));
    fs.writeFileSync(path.join(dir, 'answers.json'), JSON.stringify(answers, null, 1));
    fs.writeFileSync(path.join(dir, 'environs.json'), JSON.stringify(environs, null, 1));
    fs.writeFileSync(path.join(dir, 'histories.txt'), historiesText);
    fs.writeFileSync(path.join(dir, 'bad-database.json'), JSON.stringify(badDatabaseOutputs, null, 1));
    if (api) fs.writeFileSync(path.join(dir, 'api.log'), api.out());
    if (worker) fs.writeFileSync(path.join(dir, 'worker.log'), worker.out());
  }
  await stopProc(api);
  await stopProc(worker);
  await codehost?.close();
  await platform?.close();
  await gitServer?.close();
  await new Promise((r) => receiver?.close(r));
  await new Promise((r) => echoPlatform?.close(r));
  await new Promise((r) => echoRemote?.close(r));
  await new Promise((r) => pushRefuser?.close(r));
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

test('every service refuses no key, a wrong key and a query key without echoing them; the right keys are accepted', async () => {
  for (const s of ['task', 'scheduler', 'agents', 'traces']) {
    const url = s === 'task' ? '/api/projects' : s === 'traces' ? '/api/v1/traces' : s === 'agents' ? '/api/v1/agents' : '/api/v1/workflows';
    expect((await call(s, 'GET', url, { key: null })).status).toBe(401);
    expect((await call(s, 'GET', url, { key: S.wrongKey })).status).toBe(401);
    expect((await call(s, 'GET', `${url}?access_token=${S.wrongKey}`, { key: null })).status).toBeGreaterThanOrEqual(400);
    expect((await call(s, 'GET', url)).status).toBe(200);
  }
  expect((await call('task', 'GET', '/api/projects', { key: S.userKey })).status).toBe(200);
  // every answer kept so far has been searched at the end; the keys sent in a request are in no answer
});

test('a scheduler source: the key reaches the platform only; a platform answering 500 and one that is down', async () => {
  const created = await call('scheduler', 'POST', '/api/v1/sources', { body: { name: 'fb', source_type: 'flow-builder', url: platform.url, api_key: S.source } });
  expect(created.status).toBe(201);
  const id = created.json().id as string;
  expect(platform.requests.some((r) => r.apiKey === S.source)).toBe(true);
  expect((await call('scheduler', 'GET', `/api/v1/sources/${id}/flows`)).status).toBe(200);
  const wf = `flowfail-${tag}`;
  expect((await call('scheduler', 'POST', '/api/v1/workflows', { body: { name: wf, tasks: [{ name: 'f1', type: 'flow', source: id, flow: FAKE_FLOWS.summarise.id, input: 'x' }] } })).status).toBe(201);
  platform.mode = 'error';
  await call('scheduler', 'GET', `/api/v1/sources/${id}/flows`);
  await call('scheduler', 'GET', '/api/v1/flows');
  const run = await call('scheduler', 'POST', `/api/v1/workflows/${wf}/run`);
  expect(run.status).toBe(200);
  const execId = run.json().executionId as string;
  const ended = await eventually(async () => {
    const e = await call('scheduler', 'GET', `/api/v1/executions/${execId}`);
    return e.json().status !== 'running' && e.json();
  }, 120_000, 500);
  expect(ended.status).toBe('failed');
  await call('scheduler', 'GET', `/api/v1/executions/${execId}/logs`);
  platform.mode = 'ok';
  await platform.stop();
  await call('scheduler', 'GET', `/api/v1/sources/${id}/flows`);
  await call('scheduler', 'GET', '/api/v1/flows');
  await call('scheduler', 'GET', `/api/v1/sources/${id}`);
  await call('scheduler', 'GET', '/api/v1/sources');
  // a key no header can carry is refused naming the field, not the value
  await call('scheduler', 'PATCH', `/api/v1/sources/${id}`, { body: { api_key: `${S.source}\nx` } });
  await platform.start();
});

test('a platform that echoes the key it got in its errors, and a source URL with credentials', async () => {
  platform.requiredKey = null;
  const created = await call('scheduler', 'POST', '/api/v1/sources', { body: { name: 'echo', source_type: 'flow-builder', url: echoUrl, api_key: S.echoedSource } });
  expect(created.status).toBe(201);
  const id = created.json().id as string;
  const wf = `echo-${tag}`;
  expect((await call('scheduler', 'POST', '/api/v1/workflows', { body: { name: wf, tasks: [{ name: 'f1', type: 'flow', source: id, flow: FAKE_FLOWS.summarise.id, input: 'x' }] } })).status).toBe(201);
  echoing = true;
  try {
    await call('scheduler', 'GET', `/api/v1/sources/${id}/flows`);
    await call('scheduler', 'GET', '/api/v1/flows');
    await call('scheduler', 'PATCH', `/api/v1/sources/${id}`, { body: { api_key: S.echoedSource } });
    await call('scheduler', 'POST', '/api/v1/sources', { body: { name: 'echo2', source_type: 'flow-builder', url: `${echoUrl}/two`, api_key: S.echoedSource } });
    const run = await call('scheduler', 'POST', `/api/v1/workflows/${wf}/run`);
    const execId = run.json().executionId as string;
    const ended = await eventually(async () => {
      const e = await call('scheduler', 'GET', `/api/v1/executions/${execId}`);
      return e.json().status !== 'running' && e.json();
    }, 120_000, 500);
    expect(ended.status).toBe('failed');
    await call('scheduler', 'GET', `/api/v1/executions/${execId}/logs`);
    await call('scheduler', 'GET', `/api/v1/sources/${id}`);
    await call('scheduler', 'GET', `/api/v1/executions?workflow=${wf}`);
  } finally {
    echoing = false;
    platform.requiredKey = S.source;
  }
  // credentials in a source's URL: refused naming the field, or kept and never shown
  const withCreds = await call('scheduler', 'POST', '/api/v1/sources', { body: { name: 'creds', source_type: 'flow-builder', url: platform.url.replace('//', `//bob:${S.sourceUrl}@`), api_key: S.source } });
  if (withCreds.status === 201) {
    await call('scheduler', 'GET', `/api/v1/sources/${withCreds.json().id}`);
    await call('scheduler', 'GET', '/api/v1/sources');
  }
});

test('a scheduler script printing its environment sees none of the server secrets', async () => {
  const wf = `env-${tag}`;
  expect((await call('scheduler', 'POST', '/api/v1/workflows', { body: { name: wf, tasks: [{ name: 'env', type: 'script', script: 'env; sleep 3' }] } })).status).toBe(201);
  const run = await call('scheduler', 'POST', `/api/v1/workflows/${wf}/run`);
  const execId = run.json().executionId as string;
  await eventually(async () => sampleEnvirons('ARMADA_EXECUTION_ID') > 0, 30_000, 200);
  const ended = await eventually(async () => {
    const e = await call('scheduler', 'GET', `/api/v1/executions/${execId}`);
    return e.json().status !== 'running' && e.json();
  }, 60_000, 500);
  expect(ended.status).toBe('completed');
  expect(ended.tasks[0].output).toContain(`ARMADA_EXECUTION_ID=${execId}`);
  expect(markersIn(ended.tasks[0].output)).toEqual([]);
  const names = (ended.tasks[0].output as string).split('\n').flatMap((m) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(m)?.[1] ?? []);
  expect(names).toEqual(expect.arrayContaining(['PATH', 'ARMADA_EXECUTION_ID']));
  expect([...new Set(names.filter((n) => n === 'PROFILE_TOKEN' || !DOCUMENTED_CHILD_ENV.test(n)))]).toEqual([]);
  await call('scheduler', 'GET', `/api/v1/executions/${execId}/logs`);
});

test('repository credentials: a clone that works and one whose remote refuses', async () => {
  // through the server that refuses pushes, quoting the credentials (create-pr below)
  const good = await call('task', 'POST', '/api/projects', { body: { name: `priv-${tag}`, repository: { url: `${pushRefuserUrl.replace('//', `//alice:${S.repo}@`)}/acme/widgets.git`, branch: 'main' } } });
  goodProjectId = good.json().data.id as string;
  expect(good.status).toBe(201);
  const bad = await call('task', 'POST', '/api/projects', { body: { name: `refused-${tag}`, repository: { url: `${gitServer.url.replace('//', `//alice:${S.badRepo}@`)}/acme/widgets.git`, branch: 'main' } } });
  expect(bad.status).toBe(201);
  const echoed = await call('task', 'POST', '/api/projects', {
    body: { name: `echoed-${tag}`, repository: { url: `http://alice:${S.echoedRepo}@127.0.0.1:${(echoRemote.address() as AddressInfo).port}/acme/widgets.git`, branch: 'main' } },
  });
  expect(echoed.status).toBe(201);
  for (const [p, want] of [
    [good, 'ready'],
    [bad, 'failed'],
    [echoed, 'failed'],
  ] as const) {
    const id = p.json().data.id as string;
    const done = await eventually(async () => {
      const r = (await call('task', 'GET', `/api/projects/${id}`)).json().data;
      return r.repository.status !== 'cloning' && r;
    }, 120_000, 500);
    expect(done.repository.status).toBe(want);
    if (want === 'failed') expect(done.repository.error).toMatch(/git clone failed/);
    if (p === echoed) expect(done.repository.error).toContain('remote: refused Basic ***');
  }
  await call('task', 'GET', '/api/projects');
  await call('task', 'GET', `/api/filesystem/git-repos?path=${encodeURIComponent(path.join(home, 'repos'))}`);
});

test('a webhook whose receiver answers 500: the secret signs, it is not sent or shown', async () => {
  const w = await call('task', 'POST', '/api/webhooks', { body: { url: receiverUrl, events: ['task.created'], secret: S.webhook } });
  expect(w.status).toBe(201);
  const p = await call('task', 'POST', '/api/projects', { body: { name: `hooks-${tag}`, repository: { url: makeGitRepo() } } });
  await call('task', 'POST', '/api/tasks', { body: { projectId: p.json().data.id, title: 'Wake the webhook' } });
  await eventually(async () => receiverBodies.length > 0, 60_000, 200);
  await eventually(async () => {
    const r = (await call('task', 'GET', `/api/webhooks/${w.json().data.id}`)).json().data;
    return r.receiver?.state === 'failing' && r;
  }, 60_000, 500);
  await call('task', 'GET', '/api/webhooks');
  // a webhook URL with credentials is refused naming the rule, not echoing the URL's secret
  await call('task', 'POST', '/api/webhooks', { body: { url: receiverUrl.replace('//', `//u:${S.webhook}@`), events: ['task.created'], secret: 's' } });
  expect(receiverBodies.filter((b) => markersIn(b).length > 0)).toEqual([]);
});

test('the code-host token is handed out once, to the poll that asked for it', async () => {
  const start = await call('task', 'POST', '/api/auth/codehost/device');
  expect(start.status).toBe(200);
  const d = start.json().data;
  codehost.authorize(d.user_code);
  const done = await call('task', 'POST', '/api/auth/codehost/device/poll', { body: { device_code: d.device_code }, allowed: ['codehost'] });
  expect(done.status).toBe(200);
  await call('task', 'POST', '/api/auth/codehost/device/poll', { body: { device_code: d.device_code } });
  await call('task', 'GET', '/api/auth/codehost');
  // with the token: a host that answers, then one that quotes the token it refuses (403, 422) or fails (500)
  const p = await call('task', 'POST', '/api/projects', { body: { name: `hosted-${tag}`, repository: { url: 'https://codehost.example/acme/widgets.git' }, git_repo_path: makeGitRepo() } });
  expect(p.status).toBe(201);
  const id = p.json().data.id as string;
  expect((await call('task', 'GET', `/api/projects/${id}/codehost/repository`)).status).toBe(200);
  try {
    for (const status of [403, 422, 500]) {
      codehost.oddAnswer = () => ({ status, body: JSON.stringify({ message: `token ${codehost.token} (Bearer ${Buffer.from(codehost.token).toString('base64')}) may not` }) });
      expect((await call('task', 'GET', `/api/projects/${id}/codehost/repository`)).status).toBeGreaterThanOrEqual(400);
      await call('task', 'GET', `/api/projects/${id}/codehost/pulls`);
    }
  } finally {
    codehost.oddAnswer = undefined;
  }
});

test('create-pr whose push the remote refuses, quoting the credentials: the failure does not show them', async () => {
  const t = await call('task', 'POST', '/api/tasks', { body: { projectId: goodProjectId, title: 'Change a file' } });
  const s = await call('task', 'POST', `/api/tasks/${t.json().data.id}/start`, { body: { llm: 'edit' } });
  expect(s.status).toBe(200);
  const attemptId = s.json().data.attemptId as string;
  const a = await eventually(async () => {
    const body = (await call('task', 'GET', `/api/attempts/${attemptId}`)).json().data;
    return ['completed', 'failed'].includes(body.status) && body;
  }, 120_000, 500);
  expect([a.status, a.error]).toEqual(['completed', null]);
  const pr = await call('task', 'POST', `/api/task-attempts/${attemptId}/create-pr`, { body: { title: 'From the agent' } });
  expect(pr.status).toBe(502);
  expect(pr.json().message).toContain('no pushes for Basic *** (***)');
});

test('agents and a setup script printing their environment see only what docs/security.md lets them', async () => {
  const project = await call('task', 'POST', '/api/projects', { body: { name: `env-${tag}`, repository: { url: makeGitRepo() }, setup_script: 'env' } });
  expect(project.status).toBe(201);
  const projectId = project.json().data.id as string;
  for (const llm of ['envdump', 'printenv']) {
    const t = await call('task', 'POST', '/api/tasks', { body: { projectId, title: `Print the environment (${llm})` } });
    const s = await call('task', 'POST', `/api/tasks/${t.json().data.id}/start`, { body: { llm } });
    expect(s.status).toBe(200);
    const attemptId = s.json().data.attemptId as string;
    if (llm === 'printenv') await eventually(async () => sampleEnvirons('ARMADA_ATTEMPT_ID') > 0, 60_000, 200);
    const a = await eventually(async () => {
      const body = (await call('task', 'GET', `/api/attempts/${attemptId}`)).json().data;
      return ['completed', 'failed'].includes(body.status) && body;
    }, 120_000, 500);
    expect([a.status, a.error]).toEqual(['completed', null]);
    const logs = await call('task', 'GET', `/api/attempts/${attemptId}/logs`, { allowed: ['profile'] });
    // the agent sees its profile's literal and nothing else of ours
    expect(logs.body).toContain(S.profile);
    expect(markersIn(logs.body, ['profile'])).toEqual([]);
    if (llm === 'printenv') {
      // `env` of the setup script and of the agent: names of the allow-list, the profile's env and the contract only
      const names = logs.body
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { message: string }).message)
        .flatMap((m) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(m)?.[1] ?? []);
      expect(names).toEqual(expect.arrayContaining(['PATH', 'HOME', 'PROFILE_TOKEN', 'ARMADA_ATTEMPT_ID', 'ARMADA_SETUP_ID']));
      expect([...new Set(names.filter((n) => !DOCUMENTED_CHILD_ENV.test(n)))]).toEqual([]);
    }
    await call('task', 'GET', `/api/processes/${s.json().data.processId}/logs`, { allowed: ['profile'] });
    await call('task', 'GET', `/api/tasks/${t.json().data.id}`);
  }
  expect(environs.length).toBeGreaterThan(0);
  expect(environs.filter((e) => e.found.length > 0)).toEqual([]);
});

test("a multi-agent task's agent sees its profile's env and none of the server secrets", async () => {
  const res = await call('agents', 'POST', '/api/v1/tasks', { body: { agent: MULTI_AGENT, task: 'print your environment' } });
  expect(res.status).toBe(201);
  const done = await eventually(async () => {
    const t = (await call('agents', 'GET', `/api/v1/tasks/${res.json().taskId}`, { allowed: ['profile'] })).json();
    return ['completed', 'failed'].includes(t.status) && t;
  }, 60_000, 500);
  expect(done.status).toBe('completed');
  expect(done.result).toContain(`env PROFILE_TOKEN=${S.profile}`);
  expect(done.result).toContain('env DATABASE_URL=\n');
  await call('agents', 'GET', '/api/v1/agents');
  await call('agents', 'GET', `/api/v1/agents/${MULTI_AGENT}/status`);
});

/** The multi-agent actor's workflow runs until terminated. */
async function terminateActor(): Promise<void> {
  const connection = await Connection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
  try {
    await new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' }).workflow
      .getHandle(`agent:${MULTI_AGENT}`)
      .terminate('test over')
      .catch(() => undefined);
  } finally {
    await connection.close();
  }
}

test('armada migrate and armada api with a DATABASE_URL whose password PostgreSQL refuses, or whose server is gone', async () => {
  await badDatabaseRuns;
  // they said why
  expect(badDatabaseOutputs.find((o) => o.what === 'migrate, refused')?.out).toMatch(/password authentication failed/);
  expect(badDatabaseOutputs.filter((o) => markersIn(o.out).length > 0)).toEqual([]);
});

test('PostgreSQL stopped: the 503s name no secret; back, the services answer again', async () => {
  await pg.stop();
  try {
    for (const [s, url] of [
      ['task', '/api/projects'],
      ['task', '/api/tasks'],
      ['scheduler', '/api/v1/workflows'],
      ['scheduler', '/api/v1/sources'],
      ['agents', '/api/v1/agents'],
      ['traces', '/api/v1/traces'],
      ['task', '/health'],
      ['scheduler', '/health'],
    ]) {
      await call(s, 'GET', url);
    }
    await call('task', 'POST', '/api/projects', { body: { name: `down-${tag}`, repository: { url: makeGitRepo() } } });
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
  } finally {
    await pg.start();
  }
  await eventually(async () => (await call('task', 'GET', '/api/projects')).status === 200, 60_000, 500);
});

/** `armada <args>` with `env`: all it wrote within `ms` (it is stopped then, if it still runs). */
function runFor(args: string[], env: NodeJS.ProcessEnv, ms: number): Promise<string> {
  const child = spawn(process.execPath, [ARMADA_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('latin1')));
  child.stderr.on('data', (d: Buffer) => (out += d.toString('latin1')));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGINT'), ms);
    const killer = setTimeout(() => child.kill('SIGKILL'), ms + 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      clearTimeout(killer);
      resolve(out);
    });
  });
}

/**
 * `armada migrate` and `armada api` with a DATABASE_URL whose password PostgreSQL refuses, and with one whose server is
 * gone, one after the other (~35 s: each api runs its 15 s, each migrate up to 20 s). beforeAll starts them once the
 * stack is up, so they run beside the tests before theirs (the clones, an attempt's create-pr, the agents) instead of
 * after them; their test waits for them, and comes before the one that stops PostgreSQL (the refused password must
 * meet a server that runs).
 */
async function runWithBadDatabases(): Promise<void> {
  const ports = { ARMADA_TASK_PORT: '0', ARMADA_SCHEDULER_PORT: '0', ARMADA_AGENTS_PORT: '0', ARMADA_TRACES_PORT: '0' };
  for (const [what, url] of [
    ['refused', pg.url.replace(S.db, S.refusedDb)],
    ['gone', `postgres://armada:${S.goneDb}@127.0.0.1:1/armada`],
  ]) {
    badDatabaseOutputs.push({ what: `migrate, ${what}`, out: await runFor(['migrate'], { ...vars, DATABASE_URL: url }, 20_000) });
    badDatabaseOutputs.push({ what: `api, ${what}`, out: await runFor(['api'], { ...vars, ...ports, DATABASE_URL: url, ARMADA_TASK_QUEUE: `secrets-${tag}-bad` }, 15_000) });
  }
}

test('the key of a stream route, sent as ?access_token=, is in no answer or log', async () => {
  const ctl = new AbortController();
  const res = await fetch(`${base('task')}/api/events/processes/${crypto.randomUUID()}/logs?access_token=${S.taskKey}`, { signal: ctl.signal });
  const body = await Promise.race([res.text(), new Promise<string>((r) => setTimeout(() => r(''), 2000))]);
  ctl.abort();
  answers.push({ what: `task SSE ?access_token → ${res.status}`, status: res.status, headers: JSON.stringify([...res.headers]), body, allowed: [] });
  expect(res.status).not.toBe(401);
});

test('the metrics and the OpenAPI documents of every service', async () => {
  for (const s of ['task', 'scheduler', 'agents', 'traces']) {
    await call(s, 'GET', '/metrics');
    await call(s, 'GET', s === 'task' ? '/api/openapi.json' : '/api/v1/openapi.json');
  }
  await call('task', 'GET', '/api/openapi.yaml');
  // the board's forwarding to the services
  await call('task', 'GET', '/svc/scheduler/api/v1/sources');
  await call('task', 'GET', '/svc/scheduler/api/v1/nope');
});

let historiesText = '';
test("no marker in Temporal's histories of the workflows this file's services started (payloads decoded)", async () => {
  const connection = await Connection.connect({ address: env('ARMADA_TEST_TEMPORAL_ADDRESS') });
  try {
    const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
    const ids: string[] = [];
    for await (const w of client.workflow.list({ query: `StartTime > "${startedAt}"` })) if (w.taskQueue.startsWith(`secrets-${tag}`)) ids.push(w.workflowId);
    expect(ids.length).toBeGreaterThan(3);
    const found: Record<string, string[]> = {};
    for (const id of [...new Set(ids)]) {
      const out: string[] = [];
      const walk = (v: unknown): void => {
        if (v === null || v === undefined) return;
        if (v instanceof Uint8Array) out.push(Buffer.from(v).toString('utf8'));
        else if (typeof v === 'string') out.push(v);
        else if (typeof v === 'object') for (const x of Object.values(v)) walk(x);
      };
      walk(await client.workflow.getHandle(id).fetchHistory());
      const text = out.join('\n');
      historiesText += `=== ${id}\n${text}\n`;
      // the profile's literal is in the agent's output, which an attempt's history may carry as it carries its logs
      const markers = markersIn(text, ['profile']);
      if (markers.length) found[id] = markers;
    }
    expect(found).toEqual({});
  } finally {
    await connection.close();
  }
});

test('no marker in any HTTP answer, except where it must be', () => {
  const leaks = answers.map((a) => ({ what: a.what, found: markersIn(`${a.headers}\n${a.body}`, a.allowed) })).filter((a) => a.found.length > 0);
  expect(leaks).toEqual([]);
});

test('no marker in anything armada api or armada worker wrote', async () => {
  await stopProc(api);
  await stopProc(worker);
  const found = { api: markersIn(api.out()), worker: markersIn(worker.out()) };
  const context = (out: string) =>
    Object.values(SECRETS)
      .flatMap(forms)
      .flatMap((f) => {
        const i = out.indexOf(f);
        return i < 0 ? [] : [out.slice(Math.max(0, i - 300), i + 100)];
      });
  expect({ found, lines: [...context(api.out()), ...context(worker.out())].slice(0, 5) }).toEqual({ found: { api: [], worker: [] }, lines: [] });
});
