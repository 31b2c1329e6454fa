/**
 * The chaos soak (docs/testing.md, "The chaos soak"): one `armada start` in a fresh ARMADA_HOME plus one `armada worker`
 * of its own, a mixed workload on the four services, and at seeded random moments a kill -9 of the armada start
 * process (the API and its worker), of the extra worker, of the Temporal dev server or of PostgreSQL, or PostgreSQL
 * frozen (SIGSTOP) for a while. Every request is recorded with its answer; once everything is back, the invariants
 * are checked against the answers, the rows and the git branches. Not part of `npm test`:
 *
 *   node bin/armada-ts test/soak/chaos.ts [--minutes N] [--seed S] [--json]
 *
 * Exits 1 naming each violation, 0 when there is none.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { LOST_SCRIPT_ERROR } from '../../activities/scheduler/schedulerActivities';
import { WEBHOOK_EVENTS } from '../../lib/db/webhooks';
import { startFakePlatforms, type FakePlatforms } from '../contract/fakePlatforms';
import { spawnArmada } from '../support/armadaProcess';
import { ctrlCWithin, serverPid, startArmada, type RunningArmada } from '../support/armadaStart';
import { makeGitRepo } from '../support/harness';
import { killProcessesUsing, processesUsing } from '../support/processes';
import { followLog, type Followed, type Transport } from './logFollower';
import { startWebhookReceiver, type WebhookReceiver } from './webhookReceiver';

const AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'scripted-agent.js');
/** A request sent while a dependency is down is answered within this (docs/operations.md: ~4 s for a frozen PostgreSQL). */
const FAST_MS = 5000;
/**
 * A request waiting on a frozen Temporal is answered within this of the freeze (or of its sending, if later): Temporal
 * is called down after about 6 s of silence, and the requests waiting on it get their 503 then (docs/operations.md);
 * 8.5 s on the loaded VM of session 46, so 10 s.
 */
const TEMPORAL_FROZEN_FAST_MS = 10_000;
/** A webhook delivery that reaches the receiver this long after its webhook's delete was answered came too late. */
const AFTER_DELETE_GRACE_MS = 1000;
/** Merge projects, each with a base branch of its own made at the start (so the soak runs no git of its own later). */
const MERGE_BASES = 100;
const WEBHOOK_SECRET = 'chaos-webhook-secret';
/** /health is 200 again within this of a dependency's restart or thaw (docs/operations.md; test/e2e/dependencyFaults). */
const HEALTH_BOUND_MS = 30_000;
/** A request with no answer in this has hung. */
const HANG_MS = 30_000;

type Service = 'task' | 'scheduler' | 'agents' | 'traces';
const FAULT_KINDS = ['api-kill', 'worker-kill', 'temporal-kill', 'postgres-kill', 'postgres-freeze', 'temporal-freeze', 'agent-kill'] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

interface Answer {
  service: Service;
  op: string;
  method: string;
  url: string;
  /** what the write names itself by (title, messageId, content, workflow name) */
  key?: string;
  sentAt: number;
  ms: number;
  /** 0: no HTTP answer (connection refused or reset, or HANG_MS passed) */
  status: number;
  error?: string;
  body: Record<string, unknown>;
}

interface Fault {
  kind: FaultKind;
  at: number;
  /** when the fault was undone (the process restarted or thawed) */
  undoneAt?: number;
  /** when every /health answered 200 again */
  healthyAt?: number;
  detail: string;
}

interface Options {
  minutes: number;
  seed: number;
  json: boolean;
  /** leave the stack running at the end when a violation was found (to look into it), until SIGINT */
  keep: boolean;
  /** the kinds of fault to draw from (default all) */
  faults: FaultKind[];
  /** the share of the multi-agent client's requests that are assignments (the rest are memory writes) */
  assignShare: number;
  /** only session 45's workload: no webhooks, log followers or merges */
  coreOnly: boolean;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { minutes: 5, seed: Date.now() % 100_000, json: false, keep: false, faults: [...FAULT_KINDS], assignShare: 0.25, coreOnly: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--minutes') opts.minutes = Number(argv[++i]);
    else if (a === '--seed') opts.seed = Number(argv[++i]);
    else if (a === '--json') opts.json = true;
    else if (a === '--keep') opts.keep = true;
    else if (a === '--faults') opts.faults = String(argv[++i]).split(',') as FaultKind[];
    else if (a === '--assign-share') opts.assignShare = Number(argv[++i]);
    else if (a === '--core-only') opts.coreOnly = true;
    else {
      process.stderr.write(`chaos: unknown argument '${a}'; usage: chaos.ts [--minutes N] [--seed S] [--faults K,...] [--assign-share F] [--core-only] [--json] [--keep]\n`);
      process.exit(2);
    }
  }
  if (!(opts.minutes > 0) || !Number.isInteger(opts.seed) || !opts.faults.length || opts.faults.some((f) => !FAULT_KINDS.includes(f)) || !(opts.assignShare >= 0 && opts.assignShare <= 1)) {
    process.stderr.write(`chaos: --minutes takes a positive number, --seed an integer, --assign-share a number from 0 to 1, --faults a comma-separated list of ${FAULT_KINDS.join(', ')}\n`);
    process.exit(2);
  }
  return opts;
}

/** mulberry32: the same seed gives the same fault schedule and workload choices. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The scripted agents running an attempt's process now (their environment names the attempt), read from /proc. */
function runningAgents(): { pid: number; attemptId: string }[] {
  const found: { pid: number; attemptId: string }[] = [];
  for (const pid of fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(AGENT)) continue;
      const attemptId = /(?:^|\0)ARMADA_ATTEMPT_ID=([^\0]+)/.exec(fs.readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1];
      if (attemptId) found.push({ pid: Number(pid), attemptId });
    } catch {
      /* gone, or not ours to read */
    }
  }
  return found;
}
const FINAL_ATTEMPT = ['completed', 'failed', 'cancelled'];
/** The error of an attempt whose agent was killed from outside (activities/agent/runAgent.ts, recordRun). */
const AGENT_KILLED = /^agent exited with code SIGKILL$/;

class Soak {
  readonly answers: Answer[] = [];
  readonly faults: Fault[] = [];
  readonly violations: string[] = [];
  /** the workload's choices; the faults draw from a stream of their own, so the same seed gives the same faults */
  readonly random: () => number;
  readonly faultRandom: () => number;
  stopping = false;
  armada!: RunningArmada;
  worker?: ChildProcess;
  fake!: FakePlatforms;
  apiKey = '';
  /** the output of the armada starts killed so far */
  earlierOutput = '';
  repo = '';
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;

  constructor(readonly opts: Options) {
    this.random = rng(opts.seed ^ 0x5bd1e995);
    this.faultRandom = rng(opts.seed);
    this.home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-chaos-'));
    const configPath = path.join(this.home, 'config.json');
    fs.writeFileSync(
      configPath,
      JSON.stringify({
        agents: { scripted: { command: [process.execPath, AGENT], format: 'text' } },
        attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000 },
        multiAgent: { agents: [{ name: 'helper', llm: 'scripted' }] },
        scheduler: { reconcileAfterSeconds: 20 },
      }),
    );
    // the Temporal CLI provisioned once for every run (as the tests' global setup does), not into each fresh home
    // The restart budget (5 deaths of one server in 300 s, then armada exits: docs/configuration.md) is there to stop
    // a crash loop; the soak's kills are not one, and a long run would spend it by design.
    this.env = {
      ARMADA_CONFIG: configPath,
      ARMADA_TOOLS_DIR: process.env.ARMADA_TOOLS_DIR ?? path.join(os.homedir(), '.armada', 'tools'),
      ARMADA_RESTART_MAX_FAILURES: '1000',
    };
  }

  log(line: string): void {
    if (!this.opts.json) process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.random() * xs.length)] as T;
  }

  base(service: Service): string {
    const p = this.armada.ports;
    return `http://127.0.0.1:${{ task: p.task, scheduler: p.scheduler, agents: p.agents, traces: p.traces }[service]}`;
  }

  databaseUrl(): string {
    const password = fs.readFileSync(path.join(this.home, 'pg-password'), 'utf8').trim();
    return `postgres://armada:${encodeURIComponent(password)}@127.0.0.1:${this.armada.ports.pg}/armada`;
  }

  /** One request, recorded with its answer. */
  async send(service: Service, op: string, method: string, url: string, payload?: unknown, key?: string, headers: Record<string, string> = {}): Promise<Answer> {
    const sentAt = Date.now();
    const answer: Answer = { service, op, method, url, key, sentAt, ms: 0, status: 0, body: {} };
    try {
      const r = await fetch(`${this.base(service)}${url}`, {
        method,
        headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...(service === 'task' ? {} : { 'x-api-key': this.apiKey }), ...headers },
        body: payload === undefined ? undefined : JSON.stringify(payload),
        signal: AbortSignal.timeout(HANG_MS),
      });
      const text = await r.text();
      answer.status = r.status;
      try {
        answer.body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        answer.body = { text: text.slice(0, 500) };
      }
    } catch (err) {
      answer.error = (err as Error).name === 'TimeoutError' ? 'timeout' : String((err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
    }
    answer.ms = Date.now() - sentAt;
    if (!this.stopping || op !== 'probe') this.answers.push(answer);
    return answer;
  }

  async allHealthy(): Promise<boolean> {
    const services: Service[] = ['task', 'scheduler', 'agents', 'traces'];
    const codes = await Promise.all(
      services.map(async (s) => {
        try {
          return (await fetch(`${this.base(s)}/health`, { signal: AbortSignal.timeout(5000) })).status;
        } catch {
          return 0;
        }
      }),
    );
    return codes.every((c) => c === 200);
  }

  async untilHealthy(limitMs: number): Promise<number | undefined> {
    const t0 = Date.now();
    while (Date.now() - t0 < limitMs) {
      if (await this.allHealthy()) return Date.now();
      await sleep(250);
    }
    return undefined;
  }

  /** Until some /health is not 200 (the kill noticed), at most limitMs: the outage's window starts before it. */
  async untilNoticed(limitMs: number): Promise<void> {
    const t0 = Date.now();
    while (Date.now() - t0 < limitMs && (await this.allHealthy())) await sleep(100);
  }

  async startWorker(): Promise<void> {
    const { child } = await spawnArmada(
      ['worker', '--identity', `chaos-w-${Date.now()}`],
      'worker-started',
      {
        ...process.env,
        ARMADA_HOME: this.home,
        ARMADA_CONFIG: this.env.ARMADA_CONFIG,
        DATABASE_URL: this.databaseUrl(),
        TEMPORAL_ADDRESS: `127.0.0.1:${this.armada.ports.temporal}`,
        ARMADA_LOG_LEVEL: 'warn',
        ARMADA_TEMPORAL_METRICS_PORT: '',
      },
      120_000,
    );
    this.worker = child;
  }

  async setUp(): Promise<void> {
    this.fake = await startFakePlatforms();
    this.receiver = await startWebhookReceiver(WEBHOOK_SECRET);
    this.repo = makeGitRepo({ 'README.md': 'line 1\n' });
    // the merge projects' base branches, made now: the soak runs no git in the repository while armada does
    execFileSync('git', ['update-ref', '--stdin'], { cwd: this.repo, input: Array.from({ length: MERGE_BASES }, (_, i) => `create refs/heads/chaos-base-${i + 1} main\n`).join('') });
    this.log(`starting armada in ${this.home}`);
    this.armada = await startArmada(this.home, this.env);
    this.apiKey = fs.readFileSync(path.join(this.home, 'api-key'), 'utf8').trim();
    await this.startWorker();
    // before the workload: a webhook kept to the end (every event after it is delivered) and one deleted halfway;
    // not task.status_changed, the most frequent event, whose thousands of delivery workflows would load the stack more
    // than the rest of the workload does
    for (const name of this.opts.coreOnly ? [] : (['keep', 'gone'] as const)) {
      const events = WEBHOOK_EVENTS.filter((e) => (name === 'keep' ? e !== 'task.status_changed' : e.startsWith('attempt.')));
      const w = await this.send('task', 'create webhook', 'POST', '/api/webhooks', { url: `${this.receiver.url}/hook/${name}`, events, secret: WEBHOOK_SECRET }, name);
      if (w.status !== 201) throw new Error(`the ${name} webhook was not registered: ${w.status} ${JSON.stringify(w.body)}`);
      this.webhooks[name] = (w.body.data as { id: string }).id;
    }
    this.log(`up: task :${this.armada.ports.task}, pg :${this.armada.ports.pg}, temporal :${this.armada.ports.temporal}`);
  }

  // --- the workload ---------------------------------------------------------------------------------------------

  readonly projects: string[] = [];
  readonly starts: { taskId: string; answer: Answer }[] = [];
  receiver!: WebhookReceiver;
  readonly webhooks: { keep?: string; gone?: string } = {};
  /** when the delete of the `gone` webhook was answered 200 (or 404 after an answer that left it unknown) */
  goneDeletedAt?: number;
  readonly followed: Followed[] = [];
  /** attempts whose agent edits nothing (CHATTY): no branch check */
  readonly noEdit = new Set<string>();
  readonly merges: { attemptId: string; base: string; cleanup: boolean; answer: Answer }[] = [];
  /** attempt → pid of its agent killed by agent-kill */
  readonly killedAgents = new Map<string, number>();
  readonly cancels: Answer[] = [];
  seq = 0;

  async taskActor(): Promise<void> {
    while (!this.stopping) {
      const n = ++this.seq;
      if (this.projects.length === 0 || this.random() < 0.05) {
        const name = `chaos-project-${n}`;
        const p = await this.send('task', 'create project', 'POST', '/api/projects', { name, repository: { url: this.repo } }, name);
        if (p.status === 201) this.projects.push((p.body.data as { id: string }).id);
        await sleep(300);
        continue;
      }
      const title = `SLOWEDIT chaos task ${n}`;
      const t = await this.send('task', 'create task', 'POST', '/api/tasks', { projectId: this.pick(this.projects), title }, title);
      if (t.status === 201 && this.random() < 0.6) {
        const taskId = (t.body.data as { id: string }).id;
        const s = await this.send('task', 'start attempt', 'POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' }, taskId);
        this.starts.push({ taskId, answer: s });
        const attemptId = s.status === 200 ? (s.body.data as { attemptId: string }).attemptId : undefined;
        if (attemptId && this.random() < 0.3) {
          const approvalTitle = `chaos approval ${n}`;
          const a = await this.send(
            'task',
            'create approval',
            'POST',
            '/api/approvals',
            { taskAttemptId: attemptId, type: 'merge', title: approvalTitle, approvers: ['approver@example.com'], expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
            approvalTitle,
            { 'x-user-email': 'carol@example.com' },
          );
          if (a.status === 201 && this.random() < 0.5) {
            const id = (a.body.data as { id: string }).id;
            await this.send('task', 'respond to approval', 'POST', `/api/approvals/${id}/respond`, { decision: 'approved', comment: 'ok' }, id, { 'x-user-email': 'approver@example.com' });
          }
        }
        if (attemptId && this.random() < 0.25) {
          await sleep(this.random() * 3000);
          this.cancels.push(await this.send('task', 'cancel attempt', 'POST', `/api/attempts/${attemptId}/cancel`, undefined, attemptId));
        }
      }
      await sleep(200 + this.random() * 600);
    }
  }

  sourceId?: string;
  readonly runs: { workflow: string; answer: Answer }[] = [];

  async schedulerActor(): Promise<void> {
    while (!this.stopping && !this.sourceId) {
      const s = await this.send('scheduler', 'create source', 'POST', '/api/v1/sources', { name: 'chaos-fb', source_type: 'flow-builder', url: `${this.fake.url}/flow-builder/chaos`, api_key: 'k' }, 'chaos-fb');
      if (s.status === 201) this.sourceId = String(s.body.id);
      else if (s.status === 409 || s.status === 400) {
        const list = await this.send('scheduler', 'list sources', 'GET', '/api/v1/sources');
        const found = (Array.isArray(list.body) ? list.body : ((list.body.sources as unknown[]) ?? [])) as { id: string; name: string }[];
        this.sourceId = found.find((x) => x.name === 'chaos-fb')?.id;
      }
      if (!this.sourceId) await sleep(1000);
    }
    let every = false;
    while (!this.stopping) {
      const n = ++this.seq;
      if (!every) {
        const e = await this.send('scheduler', 'create workflow', 'POST', '/api/v1/workflows', { name: 'chaos-every', schedule: '@every 15s', tasks: [{ name: 't', type: 'script', script: 'echo tick' }] }, 'chaos-every');
        every = e.status === 201 || e.status === 409;
        await sleep(500);
        continue;
      }
      const name = `chaos-manual-${n}`;
      const w = await this.send(
        'scheduler',
        'create workflow',
        'POST',
        '/api/v1/workflows',
        {
          name,
          tasks: [
            { name: 'script', type: 'script', script: 'echo one; sleep 1; echo two' },
            { name: 'flow', type: 'flow', source: this.sourceId, flow: 'Flow one', input: 'hi' },
          ],
        },
        name,
      );
      if (w.status === 201) this.runs.push({ workflow: name, answer: await this.send('scheduler', 'run workflow', 'POST', `/api/v1/workflows/${name}/run`, undefined, name) });
      await sleep(1000 + this.random() * 2000);
    }
  }

  async agentsActor(): Promise<void> {
    while (!this.stopping) {
      const n = ++this.seq;
      // one actor runs the agent's tasks one at a time: fewer of them than memory writes, so the queue drains
      if (this.random() < this.opts.assignShare) {
        const task = `NOOP chaos agent task ${n}`;
        await this.send('agents', 'assign task', 'POST', '/api/v1/tasks', { agent: 'helper', task }, task);
      } else {
        const content = `chaos memory entry number ${n}`;
        await this.send('agents', 'store memory', 'POST', '/api/v1/memory', { content, metadata: { n } }, content);
      }
      await sleep(300 + this.random() * 700);
    }
  }

  async tracesActor(): Promise<void> {
    while (!this.stopping) {
      const n = ++this.seq;
      const messageId = `chaos-${n}`;
      await this.send('traces', 'ingest trace', 'POST', '/api/v1/traces', { messageId, instance: 'chaos', to: '+15550102000', message: `hello ${n}` }, messageId);
      await sleep(200 + this.random() * 500);
    }
  }

  /** A task in a project of the workload, started: its attempt and first process, or undefined when refused. */
  async startedTask(title: string, projectId: string): Promise<{ taskId: string; attemptId: string; processId: string } | undefined> {
    const t = await this.send('task', 'create task', 'POST', '/api/tasks', { projectId, title }, title);
    if (t.status !== 201) return undefined;
    const taskId = (t.body.data as { id: string }).id;
    const s = await this.send('task', 'start attempt', 'POST', `/api/tasks/${taskId}/start`, { llm: 'scripted' }, taskId);
    this.starts.push({ taskId, answer: s });
    if (s.status !== 200) return undefined;
    const { attemptId, processId } = s.body.data as { attemptId: string; processId: string };
    return { taskId, attemptId, processId };
  }

  /** Attempts whose agent prints 100 lines a second for 15 s, each log followed over a WebSocket or SSE by a client that hangs up now and then. */
  async followerActor(transport: Transport): Promise<void> {
    while (!this.stopping) {
      const n = ++this.seq;
      if (this.projects.length === 0) {
        await sleep(1000);
        continue;
      }
      const started = await this.startedTask(`CHATTY:1500 chaos followed task ${n}`, this.pick(this.projects));
      if (started) {
        this.noEdit.add(started.attemptId);
        this.followed.push(
          await followLog({ base: this.base('task'), processId: started.processId, attemptId: started.attemptId, transport, hangUps: 3, random: this.random, untilMs: Date.now() + 180_000 }),
        );
      }
      await sleep(1000 + this.random() * 2000);
    }
  }

  /** Attempts in projects of their own base branch, merged once completed (some merged twice): the base has the edit once. */
  async mergeActor(): Promise<void> {
    let bases = 0;
    while (!this.stopping && bases < MERGE_BASES) {
      const base = `chaos-base-${++bases}`;
      const p = await this.send('task', 'create project', 'POST', '/api/projects', { name: `chaos-merge-${base}`, repository: { url: this.repo, branch: base } }, `chaos-merge-${base}`);
      if (p.status !== 201) {
        await sleep(1000);
        continue;
      }
      const started = await this.startedTask(`chaos merged task ${base}`, (p.body.data as { id: string }).id);
      if (!started) continue;
      let status = '';
      for (const t0 = Date.now(); Date.now() - t0 < 90_000 && !this.stopping && !['completed', 'failed', 'cancelled'].includes(status); ) {
        await sleep(1000);
        const a = await this.send('task', 'read attempt', 'GET', `/api/attempts/${started.attemptId}`);
        if (a.status === 200) status = String((a.body.data as { status: string }).status);
      }
      if (status !== 'completed') continue;
      const times = this.random() < 0.2 ? 2 : 1;
      for (let i = 0; i < times; i++) {
        const cleanup = this.random() < 0.5;
        const strategy = this.pick(['ff', 'no-ff', 'squash']);
        const answer = await this.send('task', 'merge attempt', 'POST', `/api/attempts/${started.attemptId}/merge`, { strategy, cleanup }, started.attemptId);
        this.merges.push({ attemptId: started.attemptId, base, cleanup, answer });
      }
      await sleep(1000 + this.random() * 3000);
    }
  }

  /** Deletes the `gone` webhook halfway through the run (again while the answer leaves it unknown). */
  async webhookActor(untilMs: number): Promise<void> {
    const halfway = this.t0 + (untilMs - this.t0) / 2;
    while (!this.stopping && Date.now() < halfway) await sleep(500);
    let unknown = false;
    while (!this.stopping) {
      const d = await this.send('task', 'delete webhook', 'DELETE', `/api/webhooks/${this.webhooks.gone}`, undefined, this.webhooks.gone);
      if (d.status === 200 || (d.status === 404 && unknown)) {
        this.goneDeletedAt = d.sentAt + d.ms;
        return;
      }
      if (d.status === 404) throw new Error(`the gone webhook was not there to delete: ${JSON.stringify(d.body)}`);
      if (Soak.unknownOutcome(d)) unknown = true;
      await sleep(1000);
    }
  }

  // --- the faults -----------------------------------------------------------------------------------------------

  async inject(kind: FaultKind): Promise<void> {
    const fault: Fault = { kind, at: Date.now(), detail: '' };
    this.faults.push(fault);
    switch (kind) {
      case 'postgres-kill': {
        const pid = serverPid(this.home, 'postgres');
        process.kill(pid, 'SIGKILL');
        fault.detail = `postmaster ${pid}`;
        fault.undoneAt = fault.at;
        break;
      }
      case 'temporal-kill': {
        const pid = serverPid(this.home, 'temporal');
        process.kill(pid, 'SIGKILL');
        fault.detail = `dev server ${pid}`;
        fault.undoneAt = fault.at;
        break;
      }
      case 'postgres-freeze': {
        const pid = serverPid(this.home, 'postgres');
        const frozen = [pid, ...fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
        const ms = Math.round(3000 + this.faultRandom() * 9000);
        for (const p of frozen) process.kill(p, 'SIGSTOP');
        await sleep(ms);
        for (const p of frozen) {
          try {
            process.kill(p, 'SIGCONT');
          } catch {
            /* gone */
          }
        }
        fault.detail = `postmaster ${pid} and ${frozen.length - 1} children for ${ms} ms`;
        fault.undoneAt = Date.now();
        break;
      }
      case 'temporal-freeze': {
        const pid = serverPid(this.home, 'temporal');
        const ms = Math.round(3000 + this.faultRandom() * 12_000);
        process.kill(pid, 'SIGSTOP');
        await sleep(ms);
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          /* gone */
        }
        fault.detail = `dev server ${pid} for ${ms} ms`;
        fault.undoneAt = Date.now();
        break;
      }
      case 'agent-kill': {
        // the agent of one of this soak's running attempts (other programs on the machine may run the scripted agent too)
        const ours = new Set(this.starts.filter((s) => s.answer.status === 200).map((s) => (s.answer.body.data as { attemptId: string }).attemptId));
        let agent: { pid: number; attemptId: string } | undefined;
        for (const t0 = Date.now(); !agent && Date.now() - t0 < 10_000; await sleep(250)) {
          const running = runningAgents().filter((a) => ours.has(a.attemptId) && !this.killedAgents.has(a.attemptId));
          agent = running[Math.floor(this.faultRandom() * running.length)];
        }
        if (agent) {
          process.kill(agent.pid, 'SIGKILL');
          this.killedAgents.set(agent.attemptId, agent.pid);
          fault.detail = `agent ${agent.pid} of attempt ${agent.attemptId}`;
        } else fault.detail = 'no agent of an attempt was running for 10 s';
        fault.undoneAt = Date.now();
        break;
      }
      case 'worker-kill': {
        const w = this.worker;
        w?.kill('SIGKILL');
        const ms = Math.round(1000 + this.faultRandom() * 9000);
        fault.detail = `armada worker ${w?.pid}, restarted after ${ms} ms`;
        await sleep(ms);
        await this.startWorker();
        fault.undoneAt = Date.now();
        break;
      }
      case 'api-kill': {
        const old = this.armada;
        process.kill(old.child.pid as number, 'SIGKILL');
        await old.exited;
        this.earlierOutput += old.output();
        const ms = Math.round(500 + this.faultRandom() * 4000);
        await sleep(ms);
        this.armada = await startArmada(this.home, this.env, old.ports);
        fault.detail = `armada start ${old.child.pid} (the API processes and their worker), restarted after ${ms} ms as ${this.armada.child.pid}`;
        fault.undoneAt = Date.now();
        break;
      }
    }
    // a kill's /health stays 200 until the probe notices (docs/operations.md: within about 2 s); a 200 before that is
    // not the recovery, and the outage's window (faultAt) would end before the outage did
    if (kind === 'postgres-kill' || kind === 'temporal-kill') await this.untilNoticed(3000);
    const healthy = await this.untilHealthy(HEALTH_BOUND_MS * 4);
    fault.healthyAt = healthy;
    this.log(`${kind}: ${fault.detail}; healthy ${healthy ? `${healthy - (fault.undoneAt as number)} ms` : 'NOT'} after`);
  }

  async chaos(untilMs: number): Promise<void> {
    const kinds = this.opts.faults;
    await sleep(15_000); // some work in flight first
    while (Date.now() < untilMs) {
      await this.inject(kinds[Math.floor(this.faultRandom() * kinds.length)] as FaultKind);
      await sleep(10_000 + this.faultRandom() * 30_000);
    }
  }

  // --- the checks -----------------------------------------------------------------------------------------------

  violation(line: string): void {
    this.violations.push(line);
  }

  /** The fault whose outage window (from injection until healthy again) covers `t`. */
  faultAt(t0: number, t1: number): Fault | undefined {
    return this.faults.find((f) => f.at <= t1 && (f.healthyAt ?? Number.POSITIVE_INFINITY) >= t0);
  }

  static unknownOutcome(a: Answer): boolean {
    if (a.status === 0) return true; // the connection went with the process: it may or may not have been applied
    const text = JSON.stringify(a.body);
    return a.status === 503 && (/may or may not have been applied/.test(text) || /"outcome":"unknown"/.test(text));
  }

  /** A row a 503 leaves by design: the run or assignment marked failed before the answer, never begun. */
  static refusalRecord(op: string, row: Record<string, unknown>): boolean {
    if (op === 'run workflow') {
      return row.status === 'failed' && row.error === 'Could not start the execution' && (row.tasks as { status: string }[]).every((t) => t.status === 'pending');
    }
    if (op === 'assign task') return row.status === 'failed' && String(row.error).startsWith('could not be queued') && row.started_at === null;
    return false;
  }

  checkAnswers(): void {
    for (const a of this.answers) {
      const where = `${a.method} ${a.url} (${a.op}, sent at +${Math.round((a.sentAt - this.t0) / 1000)} s)`;
      if (a.status >= 500 && a.status !== 503) this.violation(`500: ${where} answered ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
      if (a.error === 'timeout') this.violation(`hang: ${where} had no answer within ${HANG_MS} ms`);
      const fault = this.faultAt(a.sentAt, a.sentAt + a.ms);
      const dependencyDown = fault && fault.kind !== 'worker-kill' && fault.kind !== 'agent-kill';
      // a frozen Temporal is known down only after about 6 s of silence (docs/operations.md); until then requests wait
      // counted from the freeze: a request sent before it was not waiting on a frozen server until then
      const waitedMs = fault?.kind === 'temporal-freeze' ? a.sentAt + a.ms - Math.max(a.sentAt, fault.at) : a.ms;
      const fastMs = fault?.kind === 'temporal-freeze' ? TEMPORAL_FROZEN_FAST_MS : FAST_MS;
      if (a.status !== 0 && waitedMs > fastMs && (dependencyDown || a.status === 503)) {
        this.violation(`slow: ${where} answered ${a.status} after ${a.ms} ms${fault ? ` during ${fault.kind}` : ''}`);
      }
    }
    for (const f of this.faults) {
      if (f.healthyAt === undefined) this.violation(`health: not 200 on every service within ${HEALTH_BOUND_MS * 4} ms of ${f.kind} (${f.detail})`);
      else if (f.healthyAt - (f.undoneAt as number) > HEALTH_BOUND_MS) this.violation(`health: 200 only ${f.healthyAt - (f.undoneAt as number)} ms after ${f.kind} was undone (${f.detail})`);
    }
  }

  /** Writes answered 2xx are stored whole; writes answered 4xx or a plain 503 left nothing. */
  async checkRows(db: Client): Promise<void> {
    const one = async (sql: string, params: unknown[]) => (await db.query(sql, params)).rows;
    const lookups: Record<string, (a: Answer) => Promise<unknown[]>> = {
      'create project': (a) => one('SELECT id FROM projects WHERE name = $1', [a.key]),
      'create task': (a) => one('SELECT id FROM tasks WHERE title = $1', [a.key]),
      'create approval': (a) => one('SELECT id FROM approvals WHERE title = $1', [a.key]),
      'create source': (a) => one('SELECT id FROM scheduler_sources WHERE name = $1', [a.key]),
      'create workflow': (a) => one('SELECT name FROM scheduler_workflows WHERE name = $1', [a.key]),
      'run workflow': (a) => one("SELECT id, status, error, tasks FROM scheduler_executions WHERE workflow = $1 AND trigger = 'manual'", [a.key]),
      'assign task': (a) => one('SELECT id, status, error, started_at FROM agent_tasks WHERE task = $1', [a.key]),
      'store memory': (a) => one('SELECT id FROM agent_memory WHERE content = $1', [a.key]),
      'ingest trace': (a) => one("SELECT id FROM traces WHERE instance = 'chaos' AND message_id = $1", [a.key]),
      'start attempt': (a) => one('SELECT id FROM attempts WHERE task_id = $1', [a.key]),
    };
    for (const a of this.answers) {
      const lookup = lookups[a.op];
      if (!lookup || a.key === undefined) continue;
      const rows = await lookup(a);
      const where = `${a.op} ${a.key} (answered ${a.status || a.error} at +${Math.round((a.sentAt - this.t0) / 1000)} s)`;
      // a repeat of an earlier write (409 duplicate name, or a retried source) is not this request's row
      if (a.status >= 200 && a.status < 300) {
        if (rows.length !== 1) this.violation(`lost or doubled: ${where}: ${rows.length} rows`);
      } else if (a.status === 503 && rows.length > 0 && rows.every((r) => Soak.refusalRecord(a.op, r as Record<string, unknown>))) {
        // documented: a refused run or assignment is recorded failed and never runs (docs/scheduler.md, "A run or retry
        // answered 503 never runs"; docs/multi-agent.md): a whole row that says so, not half a write
      } else if (!Soak.unknownOutcome(a) && a.status !== 409 && rows.length > 0 && !this.answers.some((b) => b !== a && b.op === a.op && b.key === a.key && b.status >= 200 && b.status < 300)) {
        this.violation(`half-stored: ${where}: ${rows.length} rows`);
      } else if (rows.length > 1) {
        this.violation(`doubled: ${where}: ${rows.length} rows`);
      }
    }
    // whole: what a 201 said is what is stored
    for (const a of this.answers.filter((x) => x.op === 'create task' && x.status === 201)) {
      const id = (a.body.data as { id: string }).id;
      const r = await one('SELECT title, project_id FROM tasks WHERE id = $1', [id]);
      if (r.length !== 1 || (r[0] as { title: string }).title !== a.key) this.violation(`not whole: task ${id} (${a.key}) stored as ${JSON.stringify(r)}`);
    }
  }

  /** Every accepted attempt, run and agent task reaches a final state, once. */
  async settle(db: Client, limitMs: number): Promise<void> {
    const t0 = Date.now();
    let said = 0;
    for (;;) {
      const { rows } = await db.query<{ attempts: string; executions: string; assigned: string; running: string }>(
        `SELECT (SELECT count(*) FROM attempts WHERE status IN ('created', 'running')) AS attempts,
                (SELECT count(*) FROM scheduler_executions WHERE status = 'running') AS executions,
                (SELECT count(*) FROM agent_tasks WHERE status = 'assigned') AS assigned,
                (SELECT count(*) FROM agent_tasks WHERE status = 'running') AS running`,
      );
      const r = rows[0] as { attempts: string; executions: string; assigned: string; running: string };
      const open = Number(r.attempts) + Number(r.executions) + Number(r.assigned) + Number(r.running);
      if (open === 0) return;
      // how the queues drain (a backlog drains steadily; a stuck row does not move)
      if (Date.now() - said >= 20_000) {
        said = Date.now();
        this.log(`settling: ${r.attempts} attempts, ${r.executions} executions, ${r.assigned} assignments queued and ${r.running} running still open`);
      }
      if (Date.now() - t0 > limitMs) {
        this.log(`${open} attempts, executions or agent tasks still open after ${limitMs} ms`);
        return;
      }
      await sleep(2000);
    }
  }

  async checkFinals(db: Client): Promise<void> {
    const started = this.starts.filter((s) => s.answer.status === 200);
    for (const s of started) {
      const attemptId = (s.answer.body.data as { attemptId: string }).attemptId;
      const { rows } = await db.query<{ status: string; branch: string | null; error: string | null }>(
        'SELECT a.status, a.branch, (SELECT p.error FROM processes p WHERE p.attempt_id = a.id ORDER BY p.created_at DESC LIMIT 1) AS error FROM attempts a WHERE a.id = $1',
        [attemptId],
      );
      const a = rows[0];
      if (!a) {
        this.violation(`lost attempt: ${attemptId} (task ${s.taskId}) answered 200 but has no row`);
        continue;
      }
      const cancelled = this.cancels.some((c) => c.key === attemptId && c.status === 200);
      const agentKilled = this.killedAgents.get(attemptId);
      if (!FINAL_ATTEMPT.includes(a.status)) this.violation(`attempt not final: ${attemptId} is ${a.status}${agentKilled ? ` (its agent ${agentKilled} was killed)` : ''}`);
      else if (a.status === 'failed' && agentKilled) {
        // documented: an agent killed from outside fails its attempt, saying so (docs/attempts.md)
        if (!a.error || !AGENT_KILLED.test(a.error)) this.violation(`attempt whose agent was killed failed without saying so: ${attemptId}: ${a.error}`);
      } else if (a.status === 'failed') this.violation(`attempt failed: ${attemptId}: ${a.error}`);
      else if (a.status === 'cancelled' && !this.cancels.some((c) => c.key === attemptId)) this.violation(`attempt cancelled unasked: ${attemptId}`);
      if (a.status === 'completed' && cancelled) this.violation(`attempt completed after its cancel was answered 200: ${attemptId}`);
      // a merge with cleanup removes the branch (and one whose answer was lost may have)
      const branchGone = this.merges.some((m) => m.attemptId === attemptId && m.cleanup && !(m.answer.status >= 400 && m.answer.status < 500));
      if (a.status === 'completed' && a.branch && !branchGone && !this.noEdit.has(attemptId)) {
        // ran to completion once: the agent's edit once, in one commit
        try {
          const readme = execFileSync('git', ['show', `${a.branch}:README.md`], { cwd: this.repo, encoding: 'utf8' });
          const edits = (readme.match(/added by the agent/g) ?? []).length;
          const commits = execFileSync('git', ['rev-list', '--count', `main..${a.branch}`], { cwd: this.repo, encoding: 'utf8' }).trim();
          if (edits !== 1 || commits !== '1') this.violation(`attempt ran twice: ${attemptId} branch ${a.branch} has ${edits} edits in ${commits} commits`);
        } catch (err) {
          this.violation(`attempt's branch missing: ${attemptId} ${a.branch}: ${(err as Error).message.split('\n')[0]}`);
        }
      }
    }
    const execs = await db.query<{ id: string; workflow: string; trigger: string; status: string; scheduled_at: Date | null; error: string | null }>(
      'SELECT id, workflow, trigger, status, scheduled_at, error FROM scheduler_executions',
    );
    for (const e of execs.rows) {
      if (e.status === 'running') this.violation(`execution not final: ${e.id} (${e.workflow})`);
      else if (e.status !== 'completed') {
        // a run answered 200 must run; a row left by a run whose answer said its outcome was unknown may be failed by the reconciler
        const answer = this.runs.find((r) => r.workflow === e.workflow)?.answer;
        const accepted = e.trigger === 'schedule' || answer?.status === 200;
        // a script whose worker died is failed, not run twice: the documented at-most-once outcome (docs/scheduler.md, runScript)
        if (accepted && !e.error?.includes(LOST_SCRIPT_ERROR)) this.violation(`execution ${e.status}: ${e.id} (${e.workflow}, ${e.trigger}): ${e.error}`);
      }
    }
    const perSlot = new Map<string, number>();
    for (const e of execs.rows.filter((x) => x.trigger === 'schedule' && x.scheduled_at)) {
      const k = `${e.workflow} ${(e.scheduled_at as Date).toISOString()}`;
      perSlot.set(k, (perSlot.get(k) ?? 0) + 1);
    }
    for (const [k, n] of perSlot) if (n > 1) this.violation(`scheduled run doubled: ${k} ran ${n} times`);
    const tasks = await db.query<{ id: string; task: string; status: string; error: string | null }>('SELECT id, task, status, error FROM agent_tasks');
    const refused = new Set(this.answers.filter((a) => a.op === 'assign task' && a.status === 503).map((a) => a.key));
    for (const t of tasks.rows) {
      // a refused assignment (503) is failed by design and checked with the answers above
      if (t.status !== 'completed' && !(t.status === 'failed' && refused.has(t.task))) this.violation(`agent task ${t.status}: ${t.id}: ${t.error}`);
    }
  }

  /** Merges: one answered 200 put the attempt's edit on its base once; none put it there twice. */
  async checkMerges(db: Client): Promise<void> {
    for (const base of new Set(this.merges.map((m) => m.base))) {
      const ofBase = this.merges.filter((m) => m.base === base);
      const attemptId = (ofBase[0] as { attemptId: string }).attemptId;
      const readme = execFileSync('git', ['show', `${base}:README.md`], { cwd: this.repo, encoding: 'utf8' });
      const edits = (readme.match(/added by the agent/g) ?? []).length;
      const accepted = ofBase.filter((m) => m.answer.status === 200);
      const row = (await db.query<{ merged_at: Date | null; merge_commit: string | null }>('SELECT merged_at, merge_commit FROM attempts WHERE id = $1', [attemptId])).rows[0];
      const answers = ofBase.map((m) => m.answer.status || m.answer.error).join(', ');
      if (edits > 1) this.violation(`merged twice: attempt ${attemptId} into ${base}: ${edits} edits (answers ${answers})`);
      if (accepted.length > 1) this.violation(`merge accepted twice: attempt ${attemptId} into ${base} (answers ${answers})`);
      if (accepted.length && edits !== 1) this.violation(`merge lost: attempt ${attemptId} answered 200 but ${base} has ${edits} edits`);
      if (accepted.length && !row?.merged_at) this.violation(`merge not recorded: attempt ${attemptId} answered 200 but has no merged_at`);
      const first = accepted[0];
      const commit = first ? String((first.answer.body.data as { commitSha?: string }).commitSha) : undefined;
      if (commit && row?.merge_commit !== commit) this.violation(`merge commit differs: attempt ${attemptId} answered ${commit}, recorded ${row?.merge_commit}`);
      if (commit && execFileSync('git', ['rev-parse', base], { cwd: this.repo, encoding: 'utf8' }).trim() !== commit) {
        this.violation(`merge commit not the base: attempt ${attemptId} answered ${commit}, ${base} is elsewhere`);
      }
      if (!accepted.length && edits === 1 && !ofBase.some((m) => Soak.unknownOutcome(m.answer))) this.violation(`merged though refused: attempt ${attemptId} into ${base} (answers ${answers})`);
    }
  }

  /** Log followers: the lines they got are the stored lines, in order, each once, none missing; all of them once the stream ended. */
  async checkFollowers(db: Client): Promise<void> {
    for (const f of this.followed) {
      const { rows } = await db.query<{ seq: number; message: string }>('SELECT seq, message FROM process_logs WHERE process_id = $1 ORDER BY seq', [f.processId]);
      const what = `${f.transport} follower of process ${f.processId} (attempt ${f.attemptId}, ${f.connects} connections, ${f.hangUps} hang-ups)`;
      const bad = f.lines.findIndex((l, i) => l.seq !== rows[i]?.seq || l.message !== rows[i]?.message);
      if (bad >= 0) {
        const got = f.lines[bad] as { seq: number; message: string };
        this.violation(`log out of order, doubled or with a gap: ${what}: line ${bad + 1} received is seq ${got.seq} '${got.message.slice(0, 60)}', stored is seq ${rows[bad]?.seq} '${rows[bad]?.message.slice(0, 60)}'`);
      } else if (f.ended && f.lines.length !== rows.length) this.violation(`log ended early: ${what}: ${f.lines.length} lines received before the end, ${rows.length} stored`);
      if (f.resets) this.violation(`log reset: ${what}: ${f.resets} stream.ready resets`);
      if (f.gaveUp) this.violation(`log follower gave up: ${what}: ${f.gaveUp}`);
    }
  }

  /** The events the `keep` webhook must have: every event it subscribes to committed from its creation on (lib/webhooks/dispatcher.ts). */
  async undelivered(db: Client): Promise<{ seq: string; type: string }[]> {
    const { rows } = await db.query<{ seq: string; type: string }>(
      'SELECT e.seq, e.type FROM events e, webhooks w WHERE w.id = $1 AND e.type = ANY (w.events) AND e.created_at >= w.created_at ORDER BY e.seq',
      [this.webhooks.keep],
    );
    const got = new Set(this.receiver.received.filter((r) => r.path === '/hook/keep').map((r) => r.delivery));
    return rows.filter((e) => !got.has(`webhook:${this.webhooks.keep}:${e.seq}`));
  }

  async checkWebhooks(db: Client): Promise<void> {
    const missing = await this.undelivered(db);
    if (missing.length) this.violation(`webhook deliveries missing: ${missing.length} events, e.g. ${missing.slice(0, 5).map((e) => `${e.seq} ${e.type}`).join(', ')}`);
    const unsigned = this.receiver.received.filter((r) => !r.signed);
    if (unsigned.length) this.violation(`webhook deliveries with a wrong signature: ${unsigned.length}, e.g. ${unsigned[0]?.delivery}`);
    if (this.goneDeletedAt === undefined) {
      this.violation('the gone webhook was never deleted');
      return;
    }
    const late = this.receiver.received.filter((r) => r.path === '/hook/gone' && r.at > (this.goneDeletedAt as number) + AFTER_DELETE_GRACE_MS);
    if (late.length) this.violation(`webhook deliveries after its delete was answered: ${late.length}, e.g. ${late.slice(0, 3).map((r) => `${r.delivery} +${r.at - (this.goneDeletedAt as number)} ms`).join(', ')}`);
    // an event committed after the delete is never sent to it
    const seqs = this.receiver.received.filter((r) => r.path === '/hook/gone').map((r) => r.delivery.split(':')[2]);
    if (seqs.length) {
      const { rows } = await db.query<{ seq: string }>('SELECT seq FROM events WHERE seq = ANY ($1::bigint[]) AND created_at > $2', [seqs, new Date(this.goneDeletedAt)]);
      if (rows.length) this.violation(`webhook got events committed after its delete: ${rows.map((r) => r.seq).join(', ')}`);
    }
  }

  /** Until the `keep` webhook has every event, at most limitMs. */
  async untilDelivered(db: Client, limitMs: number): Promise<void> {
    const t0 = Date.now();
    for (let missing = await this.undelivered(db); missing.length; missing = await this.undelivered(db)) {
      if (Date.now() - t0 > limitMs) {
        this.log(`${missing.length} webhook deliveries still missing after ${limitMs} ms`);
        return;
      }
      await sleep(2000);
    }
  }

  t0 = Date.now();

  async run(): Promise<number> {
    await this.setUp();
    this.t0 = Date.now();
    const untilMs = this.t0 + this.opts.minutes * 60_000;
    const actors = [
      this.taskActor(),
      this.taskActor(),
      this.schedulerActor(),
      this.agentsActor(),
      this.tracesActor(),
      ...(this.opts.coreOnly ? [] : [this.followerActor('ws'), this.followerActor('sse'), this.mergeActor(), this.webhookActor(untilMs)]),
    ];
    await this.chaos(untilMs);
    this.stopping = true;
    await Promise.all(actors);
    const healthy = await this.untilHealthy(HEALTH_BOUND_MS * 2);
    if (!healthy) this.violation('health: not 200 on every service at the end');
    // the schedule keeps starting runs: paused first, or a run it starts after the settle below is seen running
    for (let i = 0; i < 30 && (await this.send('scheduler', 'pause schedule', 'POST', '/api/v1/schedules/chaos-every/pause')).status !== 200; i++) await sleep(1000);
    await sleep(3000); // a run the schedule started just before its pause writes its row
    this.log(`workload stopped after ${this.answers.length} requests; settling`);
    const db = new Client({ connectionString: this.databaseUrl() });
    await db.connect();
    try {
      await this.settle(db, 300_000);
      if (!this.opts.coreOnly) await this.untilDelivered(db, 120_000);
      this.checkAnswers();
      await this.checkRows(db);
      await this.checkFinals(db);
      await this.checkMerges(db);
      await this.checkFollowers(db);
      if (!this.opts.coreOnly) await this.checkWebhooks(db);
      await this.readAgentTaskTimes(db);
    } finally {
      await db.end();
    }
    return this.violations.length ? 1 : 0;
  }

  /** How long the multi-agent actor's tasks waited for their turn and ran (it runs one at a time), in ms. */
  agentTaskTimes?: { tasks: number; waitMs: number; runMs: number; maxWaitMs: number };

  async readAgentTaskTimes(db: Client): Promise<void> {
    const { rows } = await db.query<{ tasks: string; wait_ms: number | null; run_ms: number | null; max_wait_ms: number | null }>(
      `WITH t AS (SELECT started_at, completed_at, lag(completed_at) OVER (ORDER BY started_at) AS previous, created_at
                    FROM agent_tasks WHERE started_at IS NOT NULL AND completed_at IS NOT NULL)
       SELECT count(*) AS tasks,
              avg(extract(epoch FROM started_at - greatest(created_at, coalesce(previous, created_at))) * 1000) AS wait_ms,
              avg(extract(epoch FROM completed_at - started_at) * 1000) AS run_ms,
              max(extract(epoch FROM started_at - greatest(created_at, coalesce(previous, created_at))) * 1000) AS max_wait_ms
         FROM t`,
    );
    const r = rows[0];
    if (r) this.agentTaskTimes = { tasks: Number(r.tasks), waitMs: Math.round(Number(r.wait_ms)), runMs: Math.round(Number(r.run_ms)), maxWaitMs: Math.round(Number(r.max_wait_ms)) };
  }

  summary(): Record<string, unknown> {
    const byStatus: Record<string, number> = {};
    for (const a of this.answers) {
      const k = a.status ? String(a.status) : (a.error ?? 'none');
      byStatus[k] = (byStatus[k] ?? 0) + 1;
    }
    const kills: Record<string, number> = {};
    for (const f of this.faults) kills[f.kind] = (kills[f.kind] ?? 0) + 1;
    return {
      seed: this.opts.seed,
      minutes: this.opts.minutes,
      requests: this.answers.length,
      byStatus,
      faults: kills,
      attemptsAccepted: this.starts.filter((s) => s.answer.status === 200).length,
      runsAccepted: this.runs.filter((r) => r.answer.status === 200).length,
      merges: this.merges.map((m) => m.answer.status || m.answer.error).join(' '),
      followed: this.followed.map((f) => `${f.transport} ${f.lines.length} lines ${f.connects} connections${f.ended ? '' : ' (not ended)'}`).join('; '),
      webhookDeliveries: this.receiver?.received.length ?? 0,
      agentsKilled: this.killedAgents.size,
      agentTaskTimes: this.agentTaskTimes,
      violations: this.violations,
    };
  }

  async tearDown(): Promise<void> {
    this.stopping = true;
    this.worker?.kill('SIGKILL');
    if (this.armada) fs.writeFileSync(path.join(os.tmpdir(), `armada-chaos-${this.opts.seed}.log`), this.earlierOutput + this.armada.output());
    try {
      if (this.armada) await ctrlCWithin(this.armada, this.home, 120_000);
    } catch (err) {
      this.log(String(err));
    }
    if (processesUsing(this.home).length) killProcessesUsing(this.home);
    await this.fake?.close();
    await this.receiver?.close();
    fs.rmSync(this.home, { recursive: true, force: true });
    if (this.repo) fs.rmSync(this.repo, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const soak = new Soak(opts);
  let code = 1;
  try {
    code = await soak.run();
  } catch (err) {
    soak.violation(`the soak itself failed: ${(err as Error).stack ?? err}`);
  } finally {
    if (opts.keep && soak.violations.length) {
      for (const v of soak.violations) process.stdout.write(`VIOLATION ${v}\n`);
      process.stdout.write(`kept for a look: ARMADA_HOME=${soak.home} DATABASE_URL=${soak.databaseUrl()} ports ${JSON.stringify(soak.armada.ports)} api key ${soak.apiKey}; Ctrl-C stops it\n`);
      await new Promise((r) => process.once('SIGINT', r));
    }
    await soak.tearDown();
  }
  const summary = soak.summary();
  if (opts.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  else {
    process.stdout.write(`${JSON.stringify({ ...summary, violations: summary.violations ? (summary.violations as string[]).length : 0 }, null, 2)}\n`);
    for (const v of soak.violations) process.stdout.write(`VIOLATION ${v}\n`);
  }
  process.exit(soak.violations.length ? 1 : code);
}

void main();
