/**
 * Attempt routes: /api/tasks/:id/start|cancel|attempts|logs, /api/attempts…, /api/task-attempts/:id/merge and
 * follow-up. Commands live in api/task/attemptService.ts; this plugin maps HTTP to them.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import {
  cancelAttempt,
  cancelTask,
  createAttempt,
  deleteAttempt,
  mergeAttempt,
  sendFollowUp,
  startCreatedAttempt,
  startNewAttempt,
  type AttemptServiceDeps,
  type StartResult,
} from './attemptService';
import { serverTiming, withServerTiming } from '../http/serverTiming';
import type { CpuPool } from '../../lib/attempts/cpuPool';
import { splitRows } from '../../lib/attempts/diffParse';
import { safeRelativePath } from '../../lib/attempts/gitDiff';
import { diffText, readAttemptWorktree } from '../../lib/attempts/hostReads';
import { levelsFrom, logLine, streamLogRows } from '../../lib/attempts/logStream';
import type { MergeStrategy } from '../../lib/attempts/mergeStrategy';
import { attemptDurationSeconds, getAttempt, listAttempts, listAttemptsForTask, TERMINAL_ATTEMPT_STATUSES, type AttemptRow } from '../../lib/db/attempts';
import { processesOfAttempt, type LogLevel } from '../../lib/db/processes';
import { getProject } from '../../lib/db/projects';
import { getTask } from '../../lib/db/tasks';
import { notFound, validationError } from '../../lib/errors';
import { ok, okPage, pagination } from '../http/envelope';
import { Envelope, ErrorResponses, ErrorSchema, IdParams, PagedEnvelope } from '../http/schemas';
import { endOnStop } from '../http/streamsEndOnStop';
import { attemptSummary } from './tasks';
import { AttemptSummary } from './taskSchemas';
import {
  Attempt,
  AttemptListQuery,
  AttemptLogsQuery,
  CancelledAttempt,
  CompareBody,
  CompareResult,
  CreateAttemptBody,
  CreatedAttempt,
  DiffQuery,
  DiffResponse,
  FollowUpBody,
  FollowUpHeaders,
  MergeBody,
  MergeResult,
  NdjsonBody,
  StartedAttempt,
  StartedTask,
  StartTaskBody,
  StartTaskHeaders,
  TaskCancelResult,
  TaskLogsQuery,
  DeleteCleanup,
} from './attemptSchemas';
import { attemptView } from './attemptViews';
import type { TaskAppDeps, TaskPluginOptions } from './deps';

/** Server-Timing of an attempt start: PostgreSQL, Temporal, and the request's whole time in the service so far. */
function startTiming(r: StartResult, reply: FastifyReply): string {
  return serverTiming({ db: r.timing.dbMs, temporal: r.timing.temporalMs, total: reply.elapsedTime });
}

export function serviceDeps(deps: TaskAppDeps): AttemptServiceDeps {
  return { db: deps.db, config: deps.config, temporal: deps.temporal, metrics: deps.metrics, background: deps.background, dependencies: deps.dependencies };
}

async function requireAttempt(deps: TaskAppDeps, id: string): Promise<AttemptRow> {
  const a = await getAttempt(deps.db, id);
  if (!a) throw notFound(`Attempt ${id} not found`);
  return a;
}

async function latestProcessId(deps: TaskAppDeps, attemptId: string): Promise<string | null> {
  const ps = await processesOfAttempt(deps.db, attemptId);
  return ps.at(-1)?.id ?? null;
}

/** Sends log rows as NDJSON (streamed while follow is on); the stream ends when the client goes away. */
export function sendNdjson(request: FastifyRequest, reply: FastifyReply, gen: (signal: AbortSignal) => AsyncGenerator<unknown[]>) {
  const ac = new AbortController();
  request.raw.on('close', () => ac.abort());
  // the service stopping cuts a follow short (api/http/streamsEndOnStop.ts): the response is aborted, not ended,
  // since its end means "finished, every line sent"; the client sees an incomplete answer and resumes with `after`
  const forget = endOnStop(request, () => {
    ac.abort();
    reply.raw.destroy();
  });
  reply.raw.on('close', forget);
  const body = Readable.from(
    (async function* () {
      yield ''; // the status and headers leave now (an empty write flushes them), not with the first line
      for await (const batch of gen(ac.signal)) yield batch.map((l) => `${JSON.stringify(l)}\n`).join('');
    })(),
  );
  // like an SSE stream (api/http/sse.ts): no byte ranges, no validators; Range and conditional headers are ignored
  return reply.header('content-type', 'application/x-ndjson; charset=utf-8').header('cache-control', 'no-cache').header('accept-ranges', 'none').send(body);
}

/** Resolves `file` inside the worktree (400 outside) and reads + formats the diff. */
export async function attemptDiff(deps: TaskAppDeps, cpu: CpuPool, a: AttemptRow, file: string | undefined, format: 'unified' | 'split' | 'json') {
  let rel: string | undefined;
  if (file !== undefined) {
    const root = a.worktree_path ?? '/nonexistent-worktree';
    const r = safeRelativePath(root, file);
    if (!r) throw validationError('file must be a path inside the attempt worktree', { file: 'is outside the worktree' });
    rel = r;
  }
  const task = await getTask(deps.db, a.task_id);
  const project = task ? await getProject(deps.db, task.project_id) : undefined;
  const worktreePath = a.cleaned_up ? null : a.worktree_path;
  const read = await readAttemptWorktree(deps, { worktreePath, hostQueue: a.host_queue }, {
    op: 'diff',
    source: { worktreePath, repoPath: project?.git_repo_path ?? null, baseCommit: a.base_commit, branch: a.branch },
    file: rel,
  });
  const text = diffText(read);
  const parsed = await cpu.parseDiff(text);
  if (format === 'unified') return { format, diff: text, summary: parsed.summary };
  if (format === 'split') {
    return { format, files: parsed.files.map((f) => ({ path: f.path, status: f.status, additions: f.additions, deletions: f.deletions, rows: splitRows(f), ...(f.omitted ? { omitted: true } : {}) })), summary: parsed.summary };
  }
  return {
    format,
    files: parsed.files.map((f) => ({ ...f, changes: f.changes.map((c) => ({ type: c.type, lineNumber: c.lineNumber, content: c.content })) })),
    summary: parsed.summary,
  };
}

export const attemptRoutes: FastifyPluginAsync<TaskPluginOptions & { cpu: CpuPool }> = async (fastify, { deps, cpu }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const svc = serviceDeps(deps);

  app.post(
    '/tasks/:id/start',
    {
      schema: { tags: ['attempts'], params: IdParams, headers: StartTaskHeaders, body: Type.Optional(StartTaskBody), response: { 200: withServerTiming(Envelope(StartedTask)), ...ErrorResponses, 422: ErrorSchema } },
    },
    async (request, reply) => {
      const key = request.headers['idempotency-key'];
      const r = await startNewAttempt(svc, request.params.id, request.body ?? {}, key || undefined);
      reply.header('server-timing', startTiming(r, reply));
      return ok(version, { attemptId: r.attempt.id, status: r.attempt.status, startedAt: r.attempt.started_at?.toISOString() ?? null, processId: r.processId, branch: r.attempt.branch });
    },
  );

  app.post('/tasks/:id/cancel', { schema: { tags: ['attempts'], params: IdParams, response: { 200: Envelope(TaskCancelResult), ...ErrorResponses } } }, async (request) => {
    if (!(await getTask(deps.db, request.params.id))) throw notFound(`Task ${request.params.id} not found`, 'TASK_NOT_FOUND');
    const r = await cancelTask(svc, request.params.id);
    return ok(version, { taskId: r.task.id, status: r.task.status, cancelledAt: r.task.updated_at.toISOString(), cancelledAttempts: r.cancelled.map((a) => a.id) });
  });

  app.get('/tasks/:id/attempts', { schema: { tags: ['attempts'], params: IdParams, response: { 200: Envelope(Type.Array(AttemptSummary)), ...ErrorResponses } } }, async (request) => {
    if (!(await getTask(deps.db, request.params.id))) throw notFound(`Task ${request.params.id} not found`, 'TASK_NOT_FOUND');
    return ok(version, (await listAttemptsForTask(deps.db, request.params.id)).map(attemptSummary));
  });

  app.get(
    '/tasks/:id/logs',
    { schema: { tags: ['attempts'], params: IdParams, querystring: TaskLogsQuery, response: { 200: NdjsonBody, ...ErrorResponses } } },
    async (request, reply) => {
      const taskId = request.params.id;
      if (!(await getTask(deps.db, taskId))) throw notFound(`Task ${taskId} not found`, 'TASK_NOT_FOUND');
      const { attemptId, follow, level } = request.query;
      if (attemptId) {
        const a = await getAttempt(deps.db, attemptId);
        if (!a || a.task_id !== taskId) throw notFound(`Attempt ${attemptId} not found in task ${taskId}`);
      }
      const processes = async () => {
        const { rows } = await deps.db.query<{ id: string }>(
          'SELECT p.id FROM processes p JOIN attempts a ON a.id = p.attempt_id WHERE a.task_id = $1 AND ($2::text IS NULL OR a.id = $2) ORDER BY p.created_at',
          [taskId, attemptId ?? null],
        );
        return rows.map((r) => r.id);
      };
      const finished = async () => {
        const { rows } = await deps.db.query<{ n: string }>(
          `SELECT count(*) AS n FROM attempts WHERE task_id = $1 AND ($2::text IS NULL OR id = $2) AND status IN ('created', 'running')`,
          [taskId, attemptId ?? null],
        );
        return Number(rows[0]?.n ?? 0) === 0;
      };
      const checked = new Set<string>();
      return sendNdjson(request, reply, async function* (signal) {
        const stream = streamLogRows(deps.db, {
          processes,
          finished,
          follow: follow === true,
          feed: deps.logs,
          topics: [attemptId ? `attempt:${attemptId}` : `task:${taskId}`],
          // a process of an attempt not seen yet may be this task's: re-read the list (once per attempt)
          discover: (note) => {
            if (attemptId) return note.attemptId === attemptId;
            if (checked.has(note.attemptId)) return false;
            checked.add(note.attemptId);
            return true;
          },
          levels: levelsFrom(level as LogLevel | undefined),
          signal,
        });
        for await (const rows of stream) yield rows.map(logLine);
      });
    },
  );

  app.get('/attempts', { schema: { tags: ['attempts'], querystring: AttemptListQuery, response: { 200: PagedEnvelope(Attempt), ...ErrorResponses } } }, async (request) => {
    const q = request.query;
    const { rows, total } = await listAttempts(deps.db, { taskId: q.taskId, llm: q.llm, status: q.status }, q.limit, (q.page - 1) * q.limit);
    const { rows: procs } = await deps.db.query<{ attempt_id: string; id: string }>(
      'SELECT DISTINCT ON (attempt_id) attempt_id, id FROM processes WHERE attempt_id = ANY($1::text[]) ORDER BY attempt_id, created_at DESC',
      [rows.map((r) => r.id)],
    );
    const latest = new Map(procs.map((p) => [p.attempt_id, p.id]));
    return okPage(version, rows.map((a) => attemptView(a, latest.get(a.id) ?? null)), pagination(q.page, q.limit, total));
  });

  app.post('/attempts', { schema: { tags: ['attempts'], body: CreateAttemptBody, response: { 200: Envelope(CreatedAttempt), ...ErrorResponses } } }, async (request) => {
    const a = await createAttempt(svc, request.body);
    return ok(version, { id: a.id, taskId: a.task_id, llm: a.llm, status: a.status, createdAt: a.created_at.toISOString() });
  });

  app.post(
    '/attempts/compare',
    { schema: { tags: ['attempts'], body: CompareBody, response: { 200: Envelope(CompareResult), ...ErrorResponses } } },
    async (request) => {
      const ids = request.body.attemptIds;
      const rows = await Promise.all(ids.map((id) => requireAttempt(deps, id)));
      const view = rows.map((a) => ({
        id: a.id,
        llm: a.llm,
        status: a.status,
        duration: attemptDurationSeconds(a),
        cost: a.total_cost,
        filesChanged: a.files_changed,
        linesAdded: a.lines_added,
        linesRemoved: a.lines_removed,
        files: a.output_changes,
      }));
      const [x, y] = view as [(typeof view)[0], (typeof view)[0]];
      const pick = (f: (v: typeof x) => number | null) => {
        const fx = f(x);
        const fy = f(y);
        if (fx === null || fy === null || fx === fy) return null;
        return fx < fy ? x.id : y.id;
      };
      const setY = new Set(y.files);
      const setX = new Set(x.files);
      return ok(version, {
        attempts: view,
        comparison: {
          fasterAttemptId: pick((v) => v.duration),
          cheaperAttemptId: pick((v) => v.cost),
          smallerChangeAttemptId: pick((v) => v.linesAdded + v.linesRemoved),
          commonFiles: x.files.filter((f) => setY.has(f)),
          onlyInFirst: x.files.filter((f) => !setY.has(f)),
          onlyInSecond: y.files.filter((f) => !setX.has(f)),
        },
      });
    },
  );

  app.get('/attempts/:id', { schema: { tags: ['attempts'], params: IdParams, response: { 200: Envelope(Attempt), ...ErrorResponses } } }, async (request) => {
    const a = await requireAttempt(deps, request.params.id);
    return ok(version, attemptView(a, await latestProcessId(deps, a.id)));
  });

  app.post('/attempts/:id/start', { schema: { tags: ['attempts'], params: IdParams, response: { 200: withServerTiming(Envelope(StartedAttempt)), ...ErrorResponses } } }, async (request, reply) => {
    const r = await startCreatedAttempt(svc, request.params.id);
    reply.header('server-timing', startTiming(r, reply));
    return ok(version, { id: r.attempt.id, status: r.attempt.status, startedAt: r.attempt.started_at?.toISOString() ?? null, processId: r.processId });
  });

  app.post('/attempts/:id/cancel', { schema: { tags: ['attempts'], params: IdParams, response: { 200: Envelope(CancelledAttempt), ...ErrorResponses } } }, async (request) => {
    const a = await cancelAttempt(svc, request.params.id);
    return ok(version, { id: a.id, status: 'cancelled' as const, cancelledAt: (a.cancelled_at as Date).toISOString() });
  });

  app.delete(
    '/attempts/:id',
    {
      schema: {
        tags: ['attempts'],
        description:
          'Cancels the attempt, removes its worktree and branch on their host and deletes it. cleanup is pending when the host did not remove them within attempts.deleteWaitMs (its worker is down): they are removed when it is back; failed, with cleanupErrors, when git refused (a stale lock file, a locked worktree).',
        params: IdParams,
        response: {
          200: Envelope(Type.Object({ deleted: Type.Literal(true), attemptId: Type.String(), ...DeleteCleanup })),
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const cleanup = await deleteAttempt(svc, request.params.id);
      return ok(version, { deleted: true as const, attemptId: request.params.id, ...cleanup });
    },
  );

  app.get(
    '/attempts/:id/logs',
    { schema: { tags: ['attempts'], params: IdParams, querystring: AttemptLogsQuery, response: { 200: NdjsonBody, ...ErrorResponses } } },
    async (request, reply) => {
      const a = await requireAttempt(deps, request.params.id);
      const { follow, level, since } = request.query;
      return sendNdjson(request, reply, async function* (signal) {
        for await (const rows of streamLogRows(deps.db, {
          processes: async () => (await processesOfAttempt(deps.db, a.id)).map((p) => p.id),
          finished: async () => {
            const cur = await getAttempt(deps.db, a.id);
            return !cur || TERMINAL_ATTEMPT_STATUSES.includes(cur.status);
          },
          follow: follow === true,
          feed: deps.logs,
          topics: [`attempt:${a.id}`],
          discover: (note) => note.attemptId === a.id,
          levels: levelsFrom(level as LogLevel | undefined),
          since: since ? new Date(since) : undefined,
          signal,
        }))
          yield rows.map(logLine);
      });
    },
  );

  app.get(
    '/attempts/:id/diff',
    { schema: { tags: ['attempts'], params: IdParams, querystring: DiffQuery, response: { 200: Envelope(DiffResponse), ...ErrorResponses } } },
    async (request) => {
      const a = await requireAttempt(deps, request.params.id);
      return ok(version, await attemptDiff(deps, cpu, a, request.query.file, request.query.format ?? 'json'));
    },
  );

  const merge = async (request: FastifyRequest<{ Params: { id: string }; Body: { message?: string; strategy?: MergeStrategy; cleanup?: boolean } | undefined }>) => {
    const b = request.body ?? {};
    const strategy = b.strategy ?? 'ff';
    const r = await mergeAttempt(svc, request.params.id, { strategy, message: b.message, cleanup: b.cleanup ?? false });
    const cleanupError = r.cleanupError ? { cleanupError: r.cleanupError } : {};
    return ok(version, { attemptId: request.params.id, commitSha: r.commitSha, merged: true, mergedAt: r.mergedAt ?? new Date().toISOString(), cleanup: r.cleanedUp, ...cleanupError, strategy });
  };
  const mergeSchema = { tags: ['attempts'], params: IdParams, body: Type.Optional(MergeBody), response: { 200: Envelope(MergeResult), ...ErrorResponses } };
  app.post('/attempts/:id/merge', { schema: mergeSchema }, merge);
  app.post('/task-attempts/:id/merge', { schema: mergeSchema }, merge);

  app.post(
    '/attempts/:id/follow-up',
    {
      schema: { tags: ['attempts'], params: IdParams, headers: FollowUpHeaders, body: FollowUpBody, response: { 202: Envelope(Type.Object({ attemptId: Type.String(), queued: Type.Boolean() })), ...ErrorResponses, 422: ErrorSchema } },
    },
    async (request, reply) => {
      // a repeat of a key (same body) the workflow has taken answers as the first did: the signal cannot say it was
      // dropped; the key with another body is a 422 before anything is sent (sendFollowUp)
      await sendFollowUp(svc, request.params.id, request.body, request.headers['idempotency-key'] || undefined);
      return reply.code(202).send(ok(version, { attemptId: request.params.id, queued: true }));
    },
  );
};
