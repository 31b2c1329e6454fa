/** Helpers of the attempt-engine tests: a stack whose config knows the scripted agent, and git checks. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, makeGitRepo, startTestStack, type TestStack } from './harness';

export const SCRIPTED_AGENT = path.join(__dirname, '..', 'fixtures', 'agents', 'scripted-agent.js');

export const agentConfig = (extra: Record<string, unknown> = {}) => ({
  agents: {
    scripted: { command: [process.execPath, SCRIPTED_AGENT], format: 'text', resumeArgs: [] },
    single: { command: [process.execPath, SCRIPTED_AGENT], format: 'text', maxConcurrent: 1 },
  },
  attempts: { heartbeatTimeoutMs: 5000, killGraceMs: 1000 },
  ...extra,
});

export function gitOut(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function gitOk(cwd: string, ...args: string[]): boolean {
  try {
    execFileSync('git', args, { cwd, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function api(stack: Pick<TestStack, 'app'>) {
  const inject = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers?: Record<string, string>) =>
    stack.app('task').inject({ method, url, payload: payload as object, headers });
  const h = {
    inject,
    async project(files?: Record<string, string>) {
      const repo = makeGitRepo(files ?? { 'README.md': 'line 1\nline 2\n', 'src/keep.txt': 'keep\n' });
      const r = await inject('POST', '/api/projects', { name: `p-${Math.random().toString(36).slice(2)}`, repository: { url: repo } });
      if (r.statusCode !== 201) throw new Error(`project: ${r.body}`);
      return { id: r.json().data.id as string, repo };
    },
    async task(projectId: string, title: string, description = '') {
      const r = await inject('POST', '/api/tasks', { projectId, title, description });
      if (r.statusCode !== 201) throw new Error(`task: ${r.body}`);
      return r.json().data.id as string;
    },
    async start(taskId: string, llm = 'scripted', headers?: Record<string, string>) {
      const r = await inject('POST', `/api/tasks/${taskId}/start`, { llm }, headers);
      if (r.statusCode !== 200) throw new Error(`start: ${r.statusCode} ${r.body}`);
      return r.json().data as { attemptId: string; status: string; processId: string; startedAt: string };
    },
    async attempt(id: string) {
      return (await inject('GET', `/api/attempts/${id}`)).json().data;
    },
    /** A process's log lines as the API reads them (NDJSON, in the order written). */
    async logs(processId: string): Promise<{ level: string; message: string }[]> {
      const r = await inject('GET', `/api/processes/${processId}/logs`);
      if (r.statusCode !== 200) throw new Error(`logs: ${r.statusCode} ${r.body}`);
      return r.body
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: string; message: string });
    },
    async until(id: string, statuses: string[], timeoutMs = 30_000) {
      return eventually(async () => {
        const a = (await inject('GET', `/api/attempts/${id}`)).json().data;
        return statuses.includes(a.status) ? a : undefined;
      }, timeoutMs, 100);
    },
  };
  return {
    ...h,
    /** A new project and task, and an attempt of the scripted agent on it run to `completed` within `timeoutMs`. */
    async finishedAttempt(title: string, timeoutMs = 30_000) {
      const p = await h.project();
      const { attemptId } = await h.start(await h.task(p.id, title));
      const a = await h.until(attemptId, ['completed'], timeoutMs);
      return { repo: p.repo, attemptId, branch: a.branch as string, worktree: a.worktreePath as string };
    },
  };
}

export type AttemptApi = ReturnType<typeof api>;

/**
 * The task service with a worker, its config knowing the scripted agent, for the calling test file: started in
 * beforeAll, closed in afterAll. The helpers of api() on it, and `stack`: read it in tests and hooks.
 */
export function attemptStackForFile(): AttemptApi & { readonly stack: TestStack } {
  let started: TestStack | undefined;
  const get = () => {
    if (!started) throw new Error('the attempt stack is not started: use it inside tests and hooks');
    return started;
  };
  beforeAll(async () => {
    started = await startTestStack({ services: ['task'], worker: true, file: agentConfig() });
  });
  afterAll(async () => {
    await started?.close();
  });
  return {
    ...api({ app: (name) => get().app(name) }),
    get stack() {
      return get();
    },
  };
}

/**
 * Saves a workflow's history as a replay fixture (test/fixtures/histories/<name>.json) when ARMADA_RECORD_HISTORIES
 * is set; the replay test (test/integration/attemptReplay.test.ts) runs every saved history. A value other than `1`
 * (a patch id, e.g. `lean-attempt-v1`) is appended to the name, so the histories of the code before a patch stay.
 */
export async function recordHistory(stack: TestStack, workflowId: string, name: string, runId?: string): Promise<void> {
  if (!process.env.ARMADA_RECORD_HISTORIES) return;
  const fs = await import('node:fs');
  const { temporal } = await import('@temporalio/proto');
  const history = await (await stack.temporal.client()).workflow.getHandle(workflowId, runId).fetchHistory();
  // binary protobuf (base64): the installed SDK's JSON history parser cannot load JSON histories (two protobufjs copies)
  const historyBase64 = Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('base64');
  const dir = path.join(__dirname, '..', 'fixtures', 'histories');
  fs.mkdirSync(dir, { recursive: true });
  const tag = process.env.ARMADA_RECORD_HISTORIES;
  const file = /^[a-z0-9-]+$/.test(tag) && tag !== '1' ? `${name}.${tag}` : name;
  fs.writeFileSync(path.join(dir, `${file}.json`), `${JSON.stringify({ workflowId, events: history.events?.length ?? 0, historyBase64 })}\n`);
}

/**
 * recordHistory for a workflow whose id the test does not know (a random id, a schedule's run): the first run that
 * visibility lists for `type` on this stack's task queue, closed as Completed (waited for, up to 20 s).
 */
export async function recordCompletedHistory(stack: TestStack, type: string, name: string): Promise<void> {
  if (!process.env.ARMADA_RECORD_HISTORIES) return;
  const client = await stack.temporal.client();
  const query = `WorkflowType = '${type}' AND TaskQueue = '${stack.config.temporal.taskQueue}' AND ExecutionStatus = 'Completed'`;
  const run = await eventually(async () => {
    for await (const w of client.workflow.list({ query })) return w;
    return undefined;
  });
  await recordHistory(stack, run.workflowId, name, run.runId);
}

/** One line of the scripted agent's journal (ARMADA_TEST_JOURNAL): which attempt's run, its pid, what it did, when. */
export interface JournalLine {
  attemptId: string;
  pid: number;
  what: string;
  at: number;
}

/** The scripted agent's journal as written so far (none yet: empty). */
export function readAgentJournal(journal: string): JournalLine[] {
  if (!fs.existsSync(journal)) return [];
  return fs
    .readFileSync(journal, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [attemptId, pid, what, at] = l.split(' ');
      return { attemptId: attemptId as string, pid: Number(pid), what: what as string, at: Number(at) };
    });
}

/** The identity a worker process of this host records on the process rows it runs (lib/workerIdentity.ts). */
export const workerIdentity = (w: { pid?: number }): string => `${os.hostname()}-${w.pid}`;

