/**
 * Code hosting routes: device-flow sign-in, pull requests of attempts (create / attach), repository info, pull
 * request listing and webhook registration. Their errors use the spec's `{success:false, error:"<code>", message}`.
 */
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { CodehostError, codehostAuthRequired, createCodehostClient, parseRepoSlug, pullRequestView, utcIso, type HostPull } from '../../lib/codehost/client';
import { loadCodehostToken, storeCodehostToken } from '../../lib/codehost/tokens';
import {
  completeDeviceFlow,
  getAttemptWithProject,
  getDeviceFlow,
  insertDeviceFlow,
  upsertAttemptPullRequest,
  type AttemptWithProject,
} from '../../lib/db/codehost';
import { FOREIGN_KEY_VIOLATION, withTransaction } from '../../lib/db/pool';
import { getProject, type ProjectRow } from '../../lib/db/projects';
import { git } from '../../lib/git';
import { actingUser } from '../http/actingUser';
import { NAME_PATTERN, TEXT_PATTERN } from '../http/inputPolicy';
import { classifyError, logErrorAnswer, setRetryAfter } from '../http/errorHandlers';
import { schemaValidationError } from '../http/validation';
import { ok } from '../http/envelope';
import { BranchName, Envelope, ErrorSchema, IdParams, PageNumber, StringEnum } from '../http/schemas';
import type { TaskAppDeps, TaskPluginOptions } from './deps';
import { WEBHOOK_URL_PATTERN } from './webhooks';

const CodehostErrorSchema = Type.Object({ success: Type.Literal(false), error: Type.String(), message: Type.String() });
/** 401 and 429 may also come from the authentication and rate-limit hooks, in the envelope. */
const CodehostErrors = {
  400: CodehostErrorSchema,
  401: Type.Union([CodehostErrorSchema, ErrorSchema]),
  403: CodehostErrorSchema,
  404: CodehostErrorSchema,
  409: CodehostErrorSchema,
  422: CodehostErrorSchema,
  429: Type.Union([CodehostErrorSchema, ErrorSchema]),
  500: CodehostErrorSchema,
  502: CodehostErrorSchema,
  503: CodehostErrorSchema,
};

const PullRequest = Type.Object({
  number: Type.Integer(),
  title: Type.String(),
  body: Type.String(),
  state: StringEnum(['open', 'closed'] as const),
  author: Type.String(),
  createdAt: Type.String(),
  htmlUrl: Type.String(),
  head: Type.String(),
  base: Type.String(),
  url: Type.String(),
});

const RepositoryInfo = Type.Object({
  owner: Type.String(),
  repo: Type.String(),
  fullName: Type.String(),
  defaultBranch: Type.String(),
  private: Type.Boolean(),
  htmlUrl: Type.String(),
  cloneUrl: Type.String(),
});

const WebhookRegistration = Type.Object({
  webhookId: Type.Integer(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  active: Type.Boolean(),
  createdAt: Type.String(),
});

const DeviceCode = Type.Object({
  device_code: Type.String(),
  user_code: Type.String(),
  verification_uri: Type.String(),
  expires_in: Type.Integer(),
  interval: Type.Integer(),
});

const DeviceToken = Type.Object({ access_token: Type.String(), token_type: Type.String(), scope: Type.String() });

/**
 * A code host's owner or repository name: letters, digits, `.`, `_`, `-`, but not the dot segments `.` and `..`, which
 * the code host's URL (/repos/{owner}/{repo}/…) would resolve to another resource. Written without a lookahead, as
 * portable JSON Schema patterns are.
 */
const CODEHOST_NAME = '^([A-Za-z0-9_-][A-Za-z0-9._-]*|\\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+)$';

const WEBHOOK_EVENTS = ['pull_request', 'push', 'issue_comment', 'pull_request_review'] as const;

/** The paths of these routes (under /api), whose every answer, the router's 400s included, has the code-hosting shape. */
const CODEHOST_PATH = /^\/api\/(?:auth\/codehost\/|task-attempts\/[^/]+\/(?:create-pr|attach-pr)\/?$|projects\/[^/]+\/codehost\/)/;

/** A 400 of the router (before any route runs) on a code-hosting path, in that shape; undefined elsewhere. */
export function codehostRouterErrorBody(path: string, message: string): object | undefined {
  return CODEHOST_PATH.test(path) ? { success: false, error: 'validation_error', message } : undefined;
}

/** Renders every error of these routes (validation included) in the code-hosting shape. */
function codehostErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const c = classifyError(err);
  const code = err instanceof CodehostError ? err.code : c.code.toLowerCase();
  logErrorAnswer(request, err, c, { code, failed: 'code-hosting request failed' });
  setRetryAfter(reply, err, c);
  return reply.code(c.statusCode).send({ success: false, error: code, message: c.message });
}

/** The innermost cause of a failed workflow (workflow → activity → the activity's own failure). */
function rootCause(err: Error): Error {
  let e = err;
  while (e.cause instanceof Error) e = e.cause;
  return e;
}

/** How long create-pr waits for any worker to take up its push workflow, unless `codehost.pushPickupMs` says. */
export const PUSH_PICKUP_MS = 30_000;

/**
 * When no worker has taken up the push workflow `pickupMs` after its start (none runs on the shared queue: its first
 * workflow task is still waiting), it is terminated, so it cannot push later: the 503 then says nothing was pushed.
 * Only when its history shows an activity scheduled before the termination (a worker took it just then) may the
 * branch have been pushed, and the 503 says so. A workflow some worker runs is waited for (the host's own pick-up is
 * bounded by the push activity's schedule-to-start timeout).
 */
async function boundPickup(handle: WorkflowHandle, result: Promise<unknown>, pickupMs: number, queue: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    result.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), pickupMs))),
  ]);
  clearTimeout(timer);
  if (settled) return;
  const events = async () => (await handle.fetchHistory()).events ?? [];
  if ((await events()).some((e) => e.workflowTaskStartedEventAttributes)) return;
  await handle.terminate(`no worker took the push within ${pickupMs} ms`).catch(() => undefined);
  const seconds = Math.round(pickupMs / 100) / 10;
  if ((await events()).some((e) => e.activityTaskScheduledEventAttributes)) {
    throw new CodehostError(503, 'host_unavailable', `No worker took the push within ${seconds} s, and one took it as it was stopped: the branch may or may not have been pushed; try again`);
  }
  throw new CodehostError(503, 'host_unavailable', `No worker (queue ${queue}) took the push within ${seconds} s: nothing was pushed; try again when a worker is up`);
}

/**
 * create-pr's `git push`: pushBranchWorkflow runs it on the worker of the attempt's host (the shared queue for an
 * attempt that never had a worktree) with retries, and this waits for it. Its failures are push_failed (502),
 * host_unavailable (503) when no worker of that host picked it up, or no worker at all took up the workflow within
 * `codehost.pushPickupMs` (boundPickup), or no_changes (409) when the branch has no changes beyond the attempt's base,
 * which the host checks before pushing anything.
 */
async function pushAttemptBranch(deps: TaskAppDeps, attempt: AttemptWithProject, repoDir: string): Promise<void> {
  const shared = deps.config.temporal.taskQueue;
  try {
    const handle = await (await deps.temporal.client()).workflow.start('pushBranchWorkflow', {
      workflowId: `push:${attempt.attempt_id}`,
      taskQueue: shared,
      args: [
        {
          hostQueue: attempt.host_queue ?? shared,
          repoDir,
          branch: attempt.branch as string,
          projectId: attempt.project_id,
          base: attempt.base_commit ?? undefined,
        },
      ],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    const result = handle.result();
    result.catch(() => undefined); // awaited below, unless boundPickup answers first (then it is terminated)
    await boundPickup(handle, result, deps.config.file.codehost?.pushPickupMs ?? PUSH_PICKUP_MS, shared);
    await result;
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    const cause = rootCause(err);
    if (cause instanceof ApplicationFailure && cause.type === 'NoChanges') {
      throw new CodehostError(409, 'no_changes', `No pull request to open: the attempt made no changes (${cause.message})`);
    }
    if (cause instanceof TimeoutFailure) {
      throw new CodehostError(503, 'host_unavailable', `No worker of the attempt's host (${attempt.host_queue ?? shared}) took the push; try again when it is up`);
    }
    throw new CodehostError(502, 'push_failed', `Pushing the attempt branch failed: ${cause.message}`);
  }
}

const invalidWebhookUrl = () => new CodehostError(400, 'invalid_webhook_url', 'url must be an absolute http(s) URL without credentials');

/** owner/repo of a project: from its repository URL, else from its local repository's `origin` URL. */
async function projectSlug(p: Pick<ProjectRow, 'repo_url' | 'git_repo_path'>): Promise<{ owner: string; repo: string }> {
  const fromUrl = parseRepoSlug(p.repo_url);
  if (fromUrl) return fromUrl;
  if (p.git_repo_path) {
    const origin = await git(p.git_repo_path, ['remote', 'get-url', 'origin'], { timeoutMs: 10_000 });
    const fromOrigin = origin.code === 0 ? parseRepoSlug(origin.stdout.trim()) : undefined;
    if (fromOrigin) return fromOrigin;
  }
  throw new CodehostError(409, 'repository_not_on_codehost', 'The project repository is not a code-host repository (no owner/repo in its URL or origin)');
}

/** Ties a pull request to an attempt (created or attached) and starts watching it for the merge. */
async function recordPullRequest(
  deps: TaskAppDeps,
  request: FastifyRequest,
  attemptId: string,
  slug: { owner: string; repo: string },
  pr: HostPull,
) {
  const row = await upsertAttemptPullRequest(deps.db, {
    attemptId,
    owner: slug.owner,
    repo: slug.repo,
    number: pr.number,
    htmlUrl: pr.html_url,
    apiUrl: pr.url,
    state: pr.state,
    attachedBy: actingUser(request, deps.localUser),
  }).catch((err: unknown) => {
    // the attempt was deleted while the host was asked (the push and the pull request take seconds): its row is gone
    if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION)
      throw new CodehostError(404, 'attempt_not_found', `Attempt ${attemptId} not found: it was deleted meanwhile, so pull request #${pr.number} is not recorded or watched`);
    throw err;
  });
  await startPullRequestWatch(deps, attemptId);
  return row;
}

export async function startPullRequestWatch(deps: TaskAppDeps, attemptId: string): Promise<void> {
  const client = await deps.temporal.client();
  await client.workflow.start('pullRequestWatchWorkflow', {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: `pr-watch:${attemptId}`,
    args: [{ attemptId, pollIntervalMs: deps.config.codehost.pollIntervalMs }],
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
  });
}

export const codehostRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.setErrorHandler(codehostErrorHandler);
  const version = deps.config.version;
  const host = createCodehostClient(deps.config.codehost);
  const key = deps.keys.encryption;
  const tokenOf = (request: FastifyRequest) => loadCodehostToken(deps.db, key, actingUser(request, deps.localUser));
  const mustProject = async (id: string) => {
    const p = await getProject(deps.db, id);
    if (!p) throw new CodehostError(404, 'project_not_found', `Project ${id} not found`);
    return p;
  };
  const mustAttempt = async (id: string): Promise<AttemptWithProject> => {
    const a = await getAttemptWithProject(deps.db, id);
    if (!a) throw new CodehostError(404, 'attempt_not_found', `Attempt ${id} not found`);
    return a;
  };

  app.post(
    '/auth/codehost/device',
    { schema: { tags: ['codehost'], response: { 200: Envelope(DeviceCode), ...CodehostErrors } } },
    async (request) => {
      const code = await host.requestDeviceCode('repo');
      await insertDeviceFlow(deps.db, code.device_code, actingUser(request, deps.localUser), code.expires_in);
      return ok(version, code);
    },
  );

  app.post(
    '/auth/codehost/device/poll',
    {
      schema: {
        tags: ['codehost'],
        body: Type.Object({ device_code: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false }),
        response: {
          200: Envelope(DeviceToken),
          202: { ...CodehostErrorSchema, description: 'authorization_pending: the user has not entered the user_code yet; poll again after `interval`' },
          ...CodehostErrors,
        },
      },
    },
    async (request, reply) => {
      const deviceCode = request.body.device_code;
      const flow = await getDeviceFlow(deps.db, deviceCode);
      if (!flow) throw new CodehostError(404, 'bad_verification_code', 'Unknown device_code: start with POST /api/auth/codehost/device');
      if (flow.status === 'completed') throw new CodehostError(409, 'device_code_used', 'The token for this device_code was already issued; it is never returned twice');
      if (flow.expires_at.getTime() <= Date.now()) throw new CodehostError(400, 'expired_token', 'The device_code expired: start again with POST /api/auth/codehost/device');
      const r = await host.pollDeviceToken(deviceCode);
      if (r.kind === 'error') {
        // Not an error of the request: the flow is still running (202); slow_down is the host's rate limit (429).
        if (r.error === 'authorization_pending') {
          return reply.code(202).send({ success: false, error: r.error, message: 'Waiting for the user to enter the user_code at verification_uri' });
        }
        const status = r.error === 'access_denied' ? 403 : r.error === 'slow_down' ? 429 : 400;
        throw new CodehostError(status, r.error, r.message);
      }
      await withTransaction(deps.db, async (tx) => {
        const locked = await getDeviceFlow(tx, deviceCode, true);
        if (!locked || locked.status === 'completed') throw new CodehostError(409, 'device_code_used', 'The token for this device_code was already issued; it is never returned twice');
        await storeCodehostToken(tx, key, locked.user_email, r);
        await completeDeviceFlow(tx, deviceCode);
      });
      return ok(version, { access_token: r.access_token, token_type: r.token_type, scope: r.scope });
    },
  );

  app.post(
    '/task-attempts/:id/create-pr',
    {
      schema: {
        tags: ['codehost'],
        params: IdParams,
        body: Type.Object(
          {
            // not blank, as task titles: a code host refuses such a title only after the branch was pushed
            title: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: NAME_PATTERN, description: 'not blank (only white space); default: the task title' })),
            body: Type.Optional(Type.String({ maxLength: 65536, pattern: TEXT_PATTERN })),
            baseBranch: Type.Optional(BranchName({ description: "the pull request's base (default: the attempt's base branch)" })),
            draft: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(PullRequest),
          ...CodehostErrors,
          409: {
            ...CodehostErrorSchema,
            description:
              'attempt_has_no_branch, repository_not_ready: nothing to push yet; worktree_removed: the attempt\'s worktree and branch were removed (a merge\'s cleanup), nothing to push; repository_not_on_codehost; no_changes: the attempt branch has no commit beyond its base (or its commits change nothing), refused before anything is pushed',
          },
        },
      },
    },
    async (request) => {
      const attempt = await mustAttempt(request.params.id);
      const token = await tokenOf(request);
      if (!token) throw codehostAuthRequired();
      if (!attempt.branch) throw new CodehostError(409, 'attempt_has_no_branch', 'The attempt has no branch yet');
      // the push would run in a worktree that is gone and fail after its retries (it answered 502 push_failed)
      if (attempt.cleaned_up)
        throw new CodehostError(409, 'worktree_removed', "No pull request to open: the attempt's worktree and branch were removed (merged with cleanup, or cleaned up)");
      const slug = await projectSlug(attempt);
      const repoDir = attempt.worktree_path ?? attempt.git_repo_path;
      if (!repoDir) throw new CodehostError(409, 'repository_not_ready', 'The project has no local repository yet');
      await pushAttemptBranch(deps, attempt, repoDir);
      const b = request.body;
      const pr: HostPull = await host.createPull(token, slug.owner, slug.repo, {
        title: b.title ?? attempt.task_title,
        body: b.body ?? '',
        head: attempt.branch,
        base: b.baseBranch ?? attempt.base_branch ?? attempt.repo_branch,
        draft: b.draft ?? false,
      });
      await recordPullRequest(deps, request, attempt.attempt_id, slug, pr);
      return ok(version, pullRequestView(pr));
    },
  );

  app.post(
    '/task-attempts/:id/attach-pr',
    {
      schema: {
        tags: ['codehost'],
        params: IdParams,
        body: Type.Object(
          {
            owner: Type.String({ minLength: 1, maxLength: 100, pattern: CODEHOST_NAME }),
            repo: Type.String({ minLength: 1, maxLength: 100, pattern: CODEHOST_NAME }),
            prNumber: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(Type.Object({ attemptId: Type.String(), prUrl: Type.String(), prNumber: Type.Integer(), attachedAt: Type.String() })),
          ...CodehostErrors,
        },
      },
    },
    async (request) => {
      const attempt = await mustAttempt(request.params.id);
      const { owner, repo, prNumber } = request.body;
      const pr = await host.getPull(await tokenOf(request), owner, repo, prNumber);
      const row = await recordPullRequest(deps, request, attempt.attempt_id, { owner, repo }, pr);
      return ok(version, { attemptId: attempt.attempt_id, prUrl: pr.html_url, prNumber: pr.number, attachedAt: row.attached_at.toISOString() });
    },
  );

  app.get(
    '/projects/:id/codehost/repository',
    { schema: { tags: ['codehost'], params: IdParams, response: { 200: Envelope(RepositoryInfo), ...CodehostErrors } } },
    async (request) => {
      const slug = await projectSlug(await mustProject(request.params.id));
      const r = await host.getRepository(await tokenOf(request), slug.owner, slug.repo);
      return ok(version, {
        owner: r.owner.login,
        repo: r.name,
        fullName: r.full_name,
        defaultBranch: r.default_branch,
        private: r.private,
        htmlUrl: r.html_url,
        cloneUrl: r.clone_url,
      });
    },
  );

  app.get(
    '/projects/:id/codehost/pulls',
    {
      schema: {
        tags: ['codehost'],
        params: IdParams,
        querystring: Type.Object({
          state: StringEnum(['open', 'closed', 'all'] as const, { default: 'open' }),
          page: PageNumber,
          limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
        }),
        response: { 200: Envelope(Type.Array(PullRequest)), ...CodehostErrors },
      },
    },
    async (request) => {
      const slug = await projectSlug(await mustProject(request.params.id));
      const pulls = await host.listPulls(await tokenOf(request), slug.owner, slug.repo, request.query);
      return ok(version, pulls.map(pullRequestView));
    },
  );

  app.post(
    '/projects/:id/codehost/webhook',
    {
      schema: {
        tags: ['codehost'],
        params: IdParams,
        body: Type.Object(
          {
            events: Type.Array(StringEnum(WEBHOOK_EVENTS), { minItems: 1, uniqueItems: true }),
            // the handler's rule, so the document states it: absolute http(s), no credentials (no `@` before the path)
            url: Type.String({ maxLength: 2048, pattern: WEBHOOK_URL_PATTERN, description: 'an absolute http(s) URL without credentials' }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(WebhookRegistration), ...CodehostErrors },
      },
      // a url outside the pattern keeps the documented code of a bad webhook URL
      schemaErrorFormatter: (errors, dataVar) =>
        errors.some((e) => e.instancePath === '/url' && e.keyword === 'pattern') ? invalidWebhookUrl() : schemaValidationError(errors, dataVar),
    },
    async (request) => {
      const project = await mustProject(request.params.id);
      const { url, events } = request.body;
      let parsed: URL | undefined;
      try {
        parsed = new URL(url);
      } catch {
        parsed = undefined;
      }
      if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || !parsed.hostname || parsed.username || parsed.password) {
        throw invalidWebhookUrl();
      }
      const token = await tokenOf(request);
      if (!token) throw codehostAuthRequired();
      const slug = await projectSlug(project);
      const hook = await host.createHook(token, slug.owner, slug.repo, { url, events });
      return ok(version, { webhookId: hook.id, url: hook.config.url ?? url, events: hook.events, active: hook.active, createdAt: utcIso(hook.created_at) });
    },
  );
};
