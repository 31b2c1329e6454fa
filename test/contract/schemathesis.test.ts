/**
 * Contract test: schemathesis runs every check against each of the four OpenAPI documents, once with the service's
 * credentials and once without, against the real services (listening on loopback), a real worker, fake platforms
 * (flow platforms, code host) and a webhook receiver. Zero failures are allowed; nothing is excluded.
 * test/contract/hooks.py keeps generated scripts and URLs harmless.
 *
 * Seed and size: ARMADA_CONTRACT_SEED (default 1), ARMADA_CONTRACT_EXAMPLES (default 5 per operation in the runs with
 * the key; those without one use 1); `npm run test:contract -- --seed 7 --examples 100` sets both (docs/openapi.md).
 * ARMADA_CONTRACT_ARGS (`--schemathesis-args '…'`) adds options of schemathesis' own after the suite's (a later option
 * wins: `--mode negative`, `--phases fuzzing`, `--generation-unique-inputs`), for a round with other generation than
 * the suite's.
 *
 * The nine runs (four documents with and without the key, the task document's with the key in two parts: see
 * LONGEST_FIRST) go three at a time, longest first, once the stack is up; each test waits for its own runs and
 * reports their failures. One run alternates between schemathesis preparing, generating and checking (one Python process, one
 * core at most) and waiting for the services' answers, so one at a time the file used less than one core (64–86 % of
 * one, services and servers included) and took 259 s in the CI run of session 34. The runs cannot disturb each other:
 * the four documents are four services with tables of their own, and without a key every operation is answered 401 by
 * the services' onRequest auth hook (schemathesis says "operations returned only 401/403") before any handler reads
 * or writes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { OPENAPI_PATHS, type ServiceKind } from '../../api/http/openapi';
import { startFakeCodehost, type FakeCodehost } from '../support/fakeCodehost';
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';
import { startFakePlatforms, type FakePlatforms } from './fakePlatforms';
import { ensureSchemathesis } from './schemathesisTool';
import { browserTestEnded } from '../support/quietTurns';

const SERVICES: ServiceKind[] = ['task', 'scheduler', 'agents', 'traces'];
/** `npm run test:contract -- --service X` sets it: only that document's two runs start (the others' tests are skipped). */
const ONLY = process.env.ARMADA_CONTRACT_SERVICE as ServiceKind | undefined;
const SEED = Number(process.env.ARMADA_CONTRACT_SEED || 1);
const EXAMPLES = Number(process.env.ARMADA_CONTRACT_EXAMPLES || 5);
/** schemathesis options after the suite's own (`npm run test:contract -- --schemathesis-args '--mode negative'`). */
const EXTRA_ARGS = (process.env.ARMADA_CONTRACT_ARGS ?? '').split(/\s+/).filter(Boolean);
// schemathesis processes at once: see the file comment
const PARALLEL = 3;
const TASK_KEY = `task-key-${crypto.randomBytes(8).toString('hex')}`;
const suffix = crypto.randomBytes(3).toString('hex');
// Agent workflow ids (agent:<name>) are global to the Temporal namespace: names of our own.
const AGENTS = [`contract-a-${suffix}`, `contract-b-${suffix}`];

let stack: TestStack;
let st: string;
let work: string;
let platforms: FakePlatforms;
let codehost: FakeCodehost;
let receiver: http.Server;
let receiverUrl: string;
let contractSourceId = '';
const bases: Partial<Record<ServiceKind, string>> = {};
const running = new Set<ChildProcess>();
/** Each test's runs: one per document and key, the task service's with the key in parts (RunSpec). */
const runs = new Map<string, { part?: string; result: Promise<RunResult> }[]>();
const docFiles: Partial<Record<ServiceKind, string>> = {};

function authHeader(service: ServiceKind): string {
  return service === 'task' ? `Authorization: Bearer ${TASK_KEY}` : `X-API-Key: ${stack.keys[service]}`;
}

/**
 * The agents document declares two alternatives, X-API-Key or a bearer key, and either is enough (docs/security.md,
 * "Either scheme"). A key sent with `-H` goes with every request, also beside a generated `Authorization` that a
 * negative case made malformed: the service rightly answers such a request on the valid X-API-Key, and schemathesis,
 * which expected the malformed credential refused, read "ST201 Schema-violating request accepted" (session 54). Its
 * OpenAPI-aware auth knows the alternatives: it sends the key as `apiKeyAuth` and leaves it out of a case that negates
 * a credential, so that case carries the malformed one alone (a 401). The run's config file is the suite's with that
 * added; the other documents declare one scheme and keep `-H`.
 */
function configFile(service: ServiceKind, withKey: boolean): string {
  const suite = path.join(__dirname, 'schemathesis.toml');
  if (service !== 'agents' || !withKey) return suite;
  const file = path.join(work, 'schemathesis-agents.toml');
  // the key comes from the run's environment (`${…}` is schemathesis' placeholder), never written to a file
  fs.writeFileSync(file, `${fs.readFileSync(suite, 'utf8')}\n[auth.openapi.apiKeyAuth]\napi_key = "\${ARMADA_CONTRACT_API_KEY}"\n`);
  return file;
}

beforeAll(async () => {
  st = ensureSchemathesis();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-contract-'));
  platforms = await startFakePlatforms();
  codehost = await startFakeCodehost([]);
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const fsRoot = path.join(work, 'files');
  fs.mkdirSync(fsRoot);
  stack = await startTestStack({
    services: SERVICES,
    worker: true,
    env: {
      ARMADA_TASK_API_KEY: TASK_KEY,
      ARMADA_CODEHOST_API_URL: codehost.url,
      ARMADA_CODEHOST_OAUTH_URL: `${codehost.url}/`,
      ARMADA_CODEHOST_CLIENT_ID: codehost.clientId,
    },
    file: {
      agents: { contract: { command: ['true'] } },
      multiAgent: { agents: AGENTS.map((name) => ({ name, role: 'contract', llm: 'contract', memory: true })) },
      filesystem: { allowedPaths: [fsRoot] },
      webhooks: { timeoutMs: 2000 },
      // a delete of attempts, tasks or a project answers within this (cleanup `pending` past it), well inside
      // schemathesis' 20 s read timeout also when the worker is slow to remove worktrees on a loaded machine: ci45a's
      // DELETE /api/projects/{id} waited out the default 15 s plus its cancels and starts and timed out
      attempts: { deleteWaitMs: 5000 },
    },
  });
  // The source flow tasks name (hooks.py): like the agent profile `contract`, a resource the generated requests can
  // rely on; hooks.py keeps PATCH and DELETE off it.
  const source = await stack.app('scheduler').inject({
    method: 'POST',
    url: '/api/v1/sources',
    headers: { 'x-api-key': stack.keys.scheduler },
    payload: { name: 'contract', source_type: 'langflow', url: `${platforms.url}/langflow/contract-source` },
  });
  expect(source.statusCode).toBe(201);
  contractSourceId = source.json().id;
  for (const service of SERVICES) {
    const app = stack.app(service);
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    bases[service] = base;
    const res = await fetch(`${base}${OPENAPI_PATHS[service].json}`, { headers: Object.fromEntries([authHeader(service).split(': ')]) });
    expect(res.status).toBe(200);
    docFiles[service] = path.join(work, `${service}.json`);
    fs.writeFileSync(docFiles[service] as string, await res.text());
  }
  // in `npm test`'s quiet phase the browser test runs first, without schemathesis beside it (quietTurns.ts)
  await browserTestEnded((line) => process.stdout.write(`contract: ${line}\n`));
  for (const spec of LONGEST_FIRST) {
    if (ONLY && spec.service !== ONLY) continue;
    const run = inSlot(() => runSchemathesis(spec));
    run.catch(() => undefined); // its test reports it
    const key = runKey(spec.service, spec.withKey);
    runs.set(key, [...(runs.get(key) ?? []), { part: spec.part?.name, result: run }]);
  }
}, 1_800_000);

afterAll(async () => {
  for (const child of running) child.kill('SIGKILL'); // a test that timed out left its run going
  if (stack) {
    // Scheduled workflows are Temporal Schedules and agents are actors, both global to the namespace: remove ours.
    const client = await stack.temporal.client().catch(() => undefined);
    const { rows } = await stack.db.query<{ temporal_id: string }>('SELECT temporal_id FROM scheduler_schedules').catch(() => ({ rows: [] as { temporal_id: string }[] }));
    await Promise.allSettled(rows.map((s) => client?.schedule.getHandle(s.temporal_id).delete()));
    await Promise.allSettled(AGENTS.map((n) => client?.workflow.getHandle(`agent:${n}`).terminate('contract test over')));
    await stack.close();
  }
  await platforms?.close();
  await codehost?.close();
  await new Promise((r) => receiver?.close(r));
  if (work) fs.rmSync(work, { recursive: true, force: true });
}, 120_000);

interface RunResult {
  code: number | null;
  output: string;
}

/** One schemathesis run: a document, with or without the key, and for a part of a document its own options. */
interface RunSpec {
  service: ServiceKind;
  withKey: boolean;
  part?: { name: string; args: string[]; phases: string };
}

// The task service's operations on attempts and their processes (half its operations, and the heavier bodies).
const ATTEMPT_PATHS = '^/api/(attempts|task-attempts|execution-processes|processes)(/|$)';

// The task service's run with the key was most of the test's time: 280 of ci47b's 389 s, alone for the last 130 s
// while the other slots stood empty. It goes as two runs: its attempt operations, and the others with the stateful
// phase, which covered none of the document's 548 inferred links in that run (19 scenarios; as a run of its own it
// cost more than a minute of loading the document). Then longest first, by their times in the CI runs of sessions 49
// and 50 (ci49a-ci50d): the scheduler's with the key (62-74 s), the task document's without one (37-48 s), agents'
// and traces' with the key (28-37 s, 26-29 s), the other runs without a key (3-9 s). The task document's without a
// key ran after agents' before (their order in session 47, when it took 71 s): the three slots' last run then ended
// 2-9 s later in each of those runs (the same times, replayed in either order).
const LONGEST_FIRST: RunSpec[] = [
  { service: 'task', withKey: true, part: { name: 'attempt operations', args: ['--include-path-regex', ATTEMPT_PATHS], phases: 'examples,coverage,fuzzing' } },
  { service: 'task', withKey: true, part: { name: 'other operations', args: ['--exclude-path-regex', ATTEMPT_PATHS], phases: 'examples,coverage,fuzzing,stateful' } },
  { service: 'scheduler', withKey: true },
  { service: 'task', withKey: false },
  { service: 'agents', withKey: true },
  { service: 'traces', withKey: true },
  { service: 'agents', withKey: false },
  { service: 'scheduler', withKey: false },
  { service: 'traces', withKey: false },
];
const runKey = (service: ServiceKind, withKey: boolean) => `${service} ${withKey ? 'with' : 'without'} key`;

let free = PARALLEL;
const waiting: (() => void)[] = [];
/** Runs `fn` once fewer than PARALLEL others run. */
async function inSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (free > 0) free--;
  else await new Promise<void>((r) => waiting.push(r));
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else free++;
  }
}

/** One schemathesis run against a service's document (or part of it); resolves with its exit code and output. */
function runSchemathesis({ service, withKey, part }: RunSpec): Promise<RunResult> {
  const repo = makeGitRepo();
  const args = [
    // its settings of schemathesis' own (the 413 a refusal of negative data): see the file; for the agents document
    // with the key, its auth too (configFile)
    '--config-file',
    configFile(service, withKey),
    'run',
    docFiles[service] as string,
    '--url', bases[service] as string,
    '--checks', 'all',
    '--seed', String(SEED),
    '--max-examples', String(withKey ? EXAMPLES : 1),
    '--workers', '1',
    '--request-timeout', '20',
    // Without a key the auth hook answers every request first (onRequest, before parsing and validation), so the
    // coverage phase's boundary values and more examples meet the same 401: one valid and one invalid case per
    // operation show the 401 and its shape. With 2 examples and the coverage phase these four runs took 466 of the
    // contract test's 1,162 run-seconds (session 47, beside other work), for no other check.
    '--phases', part?.phases ?? (withKey ? 'examples,coverage,fuzzing,stateful' : 'examples,fuzzing'),
    ...(part?.args ?? []),
    '--suppress-health-check', 'all',
    '--generation-database', 'none',
    '--no-color',
    ...(withKey && service !== 'agents' ? ['-H', authHeader(service)] : []),
    ...EXTRA_ARGS,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(st, args, {
      cwd: work,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LANG: 'C.UTF-8',
        SCHEMATHESIS_HOOKS: path.join(__dirname, 'hooks.py'),
        ARMADA_CONTRACT_WEBHOOK_URL: receiverUrl,
        ARMADA_CONTRACT_PLATFORM_URL: platforms.url,
        ARMADA_CONTRACT_REPO: repo,
        // the agents document's `agent` names a served agent, so its task assignment reaches the 201 (before, the
        // profile `contract`, no agent: only its 404); the task document's agent fields name the profile
        ARMADA_CONTRACT_AGENT: service === 'agents' ? AGENTS[0] : 'contract',
        ...(service === 'agents' && withKey ? { ARMADA_CONTRACT_API_KEY: stack.keys.agents } : {}),
        ARMADA_CONTRACT_SOURCE: 'contract',
        ARMADA_CONTRACT_SOURCE_ID: contractSourceId,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    // Three runs at nice 5 weigh about what one run at nice 0 did (kernel weights 3 × 335 against 1024) when they
    // compete for the CPU with the other jest worker's file and the run's PostgreSQL and Temporal; idle CPU they use.
    try {
      if (child.pid) os.setPriority(child.pid, 5);
    } catch {
      /* already exited: its close event reports it */
    }
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    const started = Date.now();
    child.on('close', (code) => {
      running.delete(child);
      const tally = /^=+ (.+) =+$/m.exec(output.trim().split('\n').pop() ?? '')?.[1] ?? 'no summary line';
      process.stdout.write(`contract: ${runKey(service, withKey)}${part ? `, ${part.name}` : ''}: ${((Date.now() - started) / 1000).toFixed(0)} s (${tally})\n`);
      fs.rmSync(repo, { recursive: true, force: true });
      resolve({ code, output });
    });
  });
}

/** The failure summary schemathesis prints at the end (from its FAILURES section on). */
function summary(output: string): string {
  const at = output.search(/^=+ (FAILURES|ERRORS)/m);
  return at >= 0 ? output.slice(at) : output.slice(-8000);
}

// twice what one run alone needed at most: a run shares the CPU with two others
const TIMEOUT = 2 * (300_000 + EXAMPLES * 20_000);

describe.each(SERVICES.filter((s) => !ONLY || s === ONLY))('%s document', (service) => {
  test.each([
    ['with the key', true],
    ['without a key', false],
  ])('schemathesis, all checks, %s: zero failures', async (_label, withKey) => {
    // every part's run is waited for and reported: a first part's failure ended the test, and afterAll killed the
    // other part's run before it said what it found
    const failed: string[] = [];
    for (const { part, result } of runs.get(runKey(service, withKey)) ?? []) {
      const r = await result;
      const which = `${withKey ? 'with' : 'without'} key${part ? `, ${part}` : ''}`;
      if (r.code !== 0) failed.push(`schemathesis exited ${r.code} on the ${service} document (seed ${SEED}${EXTRA_ARGS.length ? `, ${EXTRA_ARGS.join(' ')}` : ''}, ${which}):\n${summary(r.output)}`);
      else expect(r.output).toMatch(/No issues found|passed/);
    }
    if (failed.length) throw new Error(failed.join('\n\n'));
    expect(runs.get(runKey(service, withKey))?.length).toBeGreaterThan(0);
  }, TIMEOUT);
});
