/**
 * Drafts of an attempt (/api/task-attempts/:id/…): drafts, follow-up drafts (autoSend → followUpDraftWorkflow),
 * retry drafts, follow-up queues (autoExecute → followUpQueueWorkflow), draft queues; and the drafts stream
 * /ws/projects/:projectId/drafts. Missing content / prompt / retryPrompt and a queue that is not a non-empty array
 * answer 400 INVALID_REQUEST (the spec's code); other bad input is VALIDATION_ERROR. See docs/templates-and-drafts.md.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { SchemaErrorFormatter } from 'fastify/types/schema';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidRequest, notFound } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import { withinTemporalBound } from '../../lib/temporal/temporalBound';
import {
  DRAFT_TYPES,
  attemptProject,
  deleteDraft,
  deleteRetryDraft,
  getDraft,
  insertDraft,
  insertDraftQueue,
  insertFollowUpDraft,
  insertFollowUpQueue,
  insertRetryDraft,
  lockAttemptProject,
  lockFollowUpInsert,
  publishDraftEvent,
} from '../../lib/db/drafts';
import { draftQueueItemView, draftView, followUpDraftView, queueItemView, retryDraftView } from '../../lib/drafts/views';
import { followUpDraftWorkflow, followUpQueueWorkflow } from '../../workflows/followUpWorkflows';
import { ok } from '../http/envelope';
import { NAME_PATTERN, NON_BLANK_TEXT_PATTERN, TEXT_PATTERN } from '../http/inputPolicy';
import { Envelope, ErrorResponses, Id, IdParams, Nullable, StringEnum, Timestamp } from '../http/schemas';
import { callTemporal } from '../http/temporalErrors';
import { acceptsFollowUps, followUpsRefused, temporalCallMs } from './attemptService';
import { schemaValidationError } from '../http/validation';
import type { TaskPluginOptions } from './deps';
import { STREAM_ROUTE } from '../http/bearerAuth';

const Metadata = Type.Record(Type.String(), Type.Unknown());

const Draft = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  content: Type.String(),
  type: StringEnum(DRAFT_TYPES),
  metadata: Metadata,
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const FollowUpDraft = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  type: Type.Literal('follow_up'),
  prompt: Type.String(),
  autoSend: Type.Boolean(),
  sendAfter: Nullable(Type.String()),
  status: StringEnum(['draft', 'scheduled', 'sent', 'failed'] as const),
  error: Nullable(Type.String()),
  createdAt: Type.String(),
  sentAt: Nullable(Type.String()),
});
const RetryDraft = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  type: Type.Literal('retry'),
  originalPrompt: Type.String(),
  retryPrompt: Type.String(),
  retryReason: Type.String(),
  createdAt: Type.String(),
});
const FollowUpQueue = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  queue: Type.Array(Type.Object({ id: Type.String(), prompt: Type.String(), order: Type.Integer(), status: Type.String() })),
  autoExecute: Type.Boolean(),
  createdAt: Type.String(),
});
const DraftQueue = Type.Object({
  id: Type.String(),
  taskAttemptId: Type.String(),
  projectId: Type.String(),
  queue: Type.Array(Type.Object({ id: Type.String(), title: Type.String(), description: Type.String(), order: Type.Integer(), status: Type.String() })),
  createdAt: Type.String(),
});
const Deleted = Type.Object({ deleted: Type.Literal(true), draftId: Type.String() });

// A required text: present and not blank (at least one character that trim() keeps), with no control characters but
// tab and line breaks (NON_BLANK_TEXT_PATTERN); a title is one line with no control characters at all (NAME_PATTERN)
const RequiredText = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: NON_BLANK_TEXT_PATTERN });
const Title = Type.String({ minLength: 1, maxLength: 500, pattern: NAME_PATTERN });
/**
 * Prompts and draft contents: 64 Ki characters. (At 100,000 with the non-blank pattern, then `\S`, schemathesis
 * 4.32's coverage phase could not build a valid body and sent `0` as if it were one; 64 Ki is ample for a prompt.)
 */
const PROMPT_MAX = 65_536;
const Order = Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647 });

const CreateDraftBody = Type.Object(
  { content: RequiredText(PROMPT_MAX), type: StringEnum(DRAFT_TYPES), metadata: Type.Optional(Metadata) },
  { additionalProperties: false },
);
const FollowUpDraftBody = Type.Object(
  { prompt: RequiredText(PROMPT_MAX), autoSend: Type.Optional(Type.Boolean()), sendAfter: Type.Optional(Nullable(Timestamp)) },
  { additionalProperties: false },
);
const RetryDraftBody = Type.Object(
  {
    originalPrompt: Type.Optional(Type.String({ maxLength: PROMPT_MAX, pattern: TEXT_PATTERN })),
    retryPrompt: RequiredText(PROMPT_MAX),
    retryReason: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })),
  },
  { additionalProperties: false },
);
const QueueBody = Type.Object(
  {
    queue: Type.Array(Type.Object({ prompt: RequiredText(PROMPT_MAX), order: Order }), { minItems: 1, maxItems: 100 }),
    autoExecute: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const DraftQueueBody = Type.Object(
  {
    queue: Type.Array(Type.Object({ title: Title, description: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })), order: Order }), {
      minItems: 1,
      maxItems: 100,
    }),
  },
  { additionalProperties: false },
);
const DraftParams = Type.Object({ id: Id(), draftId: Id() });
const ProjectParams = Type.Object({ projectId: Id() });

// What makes a required field "missing" in the spec's sense (INVALID_REQUEST) rather than malformed.
const MISSING_KEYWORDS = new Set(['minLength', 'pattern', 'type', 'minItems']);

/**
 * The spec answers a missing or empty `field` (and a queue that is not a non-empty array) with 400 INVALID_REQUEST;
 * every other schema error keeps VALIDATION_ERROR. The rule itself is in the schema (required, minLength, pattern,
 * minItems), so the document says it; this only picks the code (Fastify's per-route `schemaErrorFormatter`).
 */
function missingIsInvalidRequest(field: string, message: string): SchemaErrorFormatter {
  return (errors, dataVar) => {
    const missing = errors.some(
      (e) =>
        (e.keyword === 'required' && e.instancePath === '' && (e.params as { missingProperty?: string }).missingProperty === field) ||
        (e.instancePath === `/${field}` && MISSING_KEYWORDS.has(e.keyword)),
    );
    if (missing) return invalidRequest(message, { [field]: 'is required' });
    return schemaValidationError(errors, dataVar);
  };
}

export const draftRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const tags = ['drafts'];

  const attemptMissing = (attemptId: string) => notFound(`Task attempt ${attemptId} not found`);
  const projectOf = async (attemptId: string) => {
    const p = await attemptProject(deps.db, attemptId);
    if (!p) throw attemptMissing(attemptId);
    return p;
  };
  // in the transaction that writes the attempt's new row: a concurrent delete of the attempt then waits for it
  const lockedProjectOf = async (c: Queryable, attemptId: string) => {
    const p = await lockAttemptProject(c, attemptId);
    if (!p) throw attemptMissing(attemptId);
    return p;
  };

  app.post(
    '/task-attempts/:id/drafts',
    {
      schema: { tags, params: IdParams, body: CreateDraftBody, response: { 201: Envelope(Draft), ...ErrorResponses } },
      schemaErrorFormatter: missingIsInvalidRequest('content', 'content is required'),
    },
    async (request, reply) => {
      const { content } = request.body;
      const attemptId = request.params.id;
      const view = await withTransaction(deps.db, async (c) => {
        const projectId = await lockedProjectOf(c, attemptId);
        const v = draftView(await insertDraft(c, { id: newId(), attemptId, content, type: request.body.type, metadata: request.body.metadata ?? {} }));
        await publishDraftEvent(c, projectId, attemptId, { type: 'draft_created', draft: v });
        return v;
      });
      return reply.code(201).send(ok(version, view));
    },
  );

  app.get('/task-attempts/:id/drafts/:draftId', { schema: { tags, params: DraftParams, response: { 200: Envelope(Draft), ...ErrorResponses } } }, async (request) => {
    const d = await getDraft(deps.db, request.params.id, request.params.draftId);
    if (!d) throw notFound(`Draft ${request.params.draftId} not found`);
    return ok(version, draftView(d));
  });

  app.delete('/task-attempts/:id/drafts/:draftId', { schema: { tags, params: DraftParams, response: { 200: Envelope(Deleted), ...ErrorResponses } } }, async (request) => {
    const { id: attemptId, draftId } = request.params;
    const projectId = await projectOf(attemptId);
    await withTransaction(deps.db, async (c) => {
      if (!(await deleteDraft(c, attemptId, draftId))) throw notFound(`Draft ${draftId} not found`);
      await publishDraftEvent(c, projectId, attemptId, { type: 'draft_deleted', draftId });
    });
    return ok(version, { deleted: true as const, draftId });
  });

  app.post(
    '/task-attempts/:id/follow-up-draft',
    {
      schema: { tags, params: IdParams, body: FollowUpDraftBody, response: { 201: Envelope(FollowUpDraft), ...ErrorResponses } },
      schemaErrorFormatter: missingIsInvalidRequest('prompt', 'prompt is required'),
    },
    async (request, reply) => {
      const { prompt } = request.body;
      const attemptId = request.params.id;
      const autoSend = request.body.autoSend ?? false;
      const sendAfter = request.body.sendAfter ? new Date(request.body.sendAfter).toISOString() : null;
      const id = newId();
      const client = autoSend ? await deps.temporal.client() : undefined;
      const view = await withTransaction(deps.db, async (c) => {
        const projectId = await lockedProjectOf(c, attemptId);
        const v = followUpDraftView(await insertFollowUpDraft(c, { id, attemptId, prompt, autoSend, sendAfter, status: autoSend ? 'scheduled' : 'draft' }));
        await publishDraftEvent(c, projectId, attemptId, { type: 'draft_created', draft: v });
        // the timer lives in Temporal: started before the row commits, a failed start leaves no scheduled row behind;
        // the workflow waits for this transaction's end (the lock) and sends nothing if the row did not commit
        if (client) {
          await lockFollowUpInsert(c, id);
          // bounded (config.temporalInTransactionMs): past it a 503 "try again", the row rolled back
          await withinTemporalBound(client, deps.config.temporalInTransactionMs, () =>
            callTemporal(() =>
              client.workflow.start(followUpDraftWorkflow, {
                workflowId: `follow-up:${id}`,
                taskQueue: deps.config.temporal.taskQueue,
                args: [{ draftId: id, attemptId, prompt, sendAfter }],
              }),
            ),
          );
        }
        return v;
      });
      return reply.code(201).send(ok(version, view));
    },
  );

  app.post(
    '/task-attempts/:id/retry-follow-up-draft',
    {
      schema: { tags, params: IdParams, body: RetryDraftBody, response: { 201: Envelope(RetryDraft), ...ErrorResponses } },
      schemaErrorFormatter: missingIsInvalidRequest('retryPrompt', 'retryPrompt is required'),
    },
    async (request, reply) => {
      const { retryPrompt } = request.body;
      const attemptId = request.params.id;
      const view = await withTransaction(deps.db, async (c) => {
        const projectId = await lockedProjectOf(c, attemptId);
        const v = retryDraftView(
          await insertRetryDraft(c, { id: newId(), attemptId, originalPrompt: request.body.originalPrompt ?? '', retryPrompt, retryReason: request.body.retryReason ?? '' }),
        );
        await publishDraftEvent(c, projectId, attemptId, { type: 'draft_created', draft: v });
        return v;
      });
      return reply.code(201).send(ok(version, view));
    },
  );

  app.delete(
    '/task-attempts/:id/retry-follow-up-draft/:draftId',
    { schema: { tags, params: DraftParams, response: { 200: Envelope(Deleted), ...ErrorResponses } } },
    async (request) => {
      const { id: attemptId, draftId } = request.params;
      const projectId = await projectOf(attemptId);
      await withTransaction(deps.db, async (c) => {
        if (!(await deleteRetryDraft(c, attemptId, draftId))) throw notFound(`Retry draft ${draftId} not found`);
        await publishDraftEvent(c, projectId, attemptId, { type: 'draft_deleted', draftId });
      });
      return ok(version, { deleted: true as const, draftId });
    },
  );

  app.post(
    '/task-attempts/:id/follow-up-queue',
    {
      schema: { tags, params: IdParams, body: QueueBody, response: { 201: Envelope(FollowUpQueue), ...ErrorResponses } },
      schemaErrorFormatter: missingIsInvalidRequest('queue', 'queue must be an array with at least one item'),
    },
    async (request, reply) => {
      const items = request.body.queue.map((item) => ({ id: newId(), prompt: item.prompt, order: item.order })).sort((a, b) => a.order - b.order);
      const attemptId = request.params.id;
      await projectOf(attemptId);
      const autoExecute = request.body.autoExecute ?? false;
      const id = newId();
      const client = autoExecute ? await deps.temporal.client() : undefined;
      // like POST /attempts/:id/follow-up: an attempt whose workflow has ended takes no follow-ups (409, nothing made);
      // asked within attempts.startTimeoutMs (a 503 "try again" past it, nothing made)
      if (client && !(await withinTemporalBound(client, temporalCallMs(deps), () => callTemporal(() => acceptsFollowUps(client, attemptId))))) {
        throw await followUpsRefused(deps.db, attemptId);
      }
      const created = await withTransaction(deps.db, async (c) => {
        await lockedProjectOf(c, attemptId);
        const q = await insertFollowUpQueue(c, { id, attemptId, autoExecute, items });
        // as for a follow-up draft: the workflow sends the items only once this transaction has committed them
        if (client) {
          await lockFollowUpInsert(c, id);
          await withinTemporalBound(client, deps.config.temporalInTransactionMs, () =>
            callTemporal(() =>
              client.workflow.start(followUpQueueWorkflow, {
                workflowId: `follow-up-queue:${id}`,
                taskQueue: deps.config.temporal.taskQueue,
                args: [{ queueId: id, attemptId, items }],
              }),
            ),
          );
        }
        return q;
      });
      return reply
        .code(201)
        .send(ok(version, { id, taskAttemptId: attemptId, queue: created.items.map(queueItemView), autoExecute, createdAt: created.created_at.toISOString() }));
    },
  );

  app.post(
    '/task-attempts/:id/draft-queue',
    {
      schema: { tags, params: IdParams, body: DraftQueueBody, response: { 201: Envelope(DraftQueue), ...ErrorResponses } },
      schemaErrorFormatter: missingIsInvalidRequest('queue', 'queue must be an array with at least one item'),
    },
    async (request, reply) => {
      const items = request.body.queue
        .map((item) => ({ id: newId(), title: item.title, description: item.description ?? '', order: item.order }))
        .sort((a, b) => a.order - b.order);
      const attemptId = request.params.id;
      const id = newId();
      const { projectId, created } = await withTransaction(deps.db, async (c) => {
        const projectId = await lockedProjectOf(c, attemptId);
        return { projectId, created: await insertDraftQueue(c, { id, attemptId, projectId, items }) };
      });
      return reply
        .code(201)
        .send(ok(version, { id, taskAttemptId: attemptId, projectId, queue: created.items.map(draftQueueItemView), createdAt: created.created_at.toISOString() }));
    },
  );
};

/**
 * The drafts stream, registered without the /api prefix: `/ws/projects/:projectId/drafts`. It takes no query
 * parameter (but `access_token`, which the key check removes): one it does not declare is a 400 before the upgrade,
 * as on `/ws` and `/ws/execution-processes`; it used to be ignored.
 */
export const draftStreamRoutes: FastifyPluginAsync<TaskPluginOptions> = async (app, { deps }) => {
  app.get('/ws/projects/:projectId/drafts', { websocket: true, config: STREAM_ROUTE, schema: { hide: true, params: ProjectParams, querystring: Type.Object({}) } }, (socket, request) => {
    const { projectId } = request.params as { projectId: string };
    // subscribe before anything async, so no event committed after the handshake is missed
    const unsubscribe = deps.events.subscribe([`project:${projectId}`], (e) => {
      if (e.type !== 'draft_created' && e.type !== 'draft_updated' && e.type !== 'draft_deleted') return;
      const message = e.type === 'draft_deleted' ? { type: e.type, draftId: e.data.draftId } : { type: e.type, draft: e.data.draft };
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
    });
    socket.on('close', unsubscribe);
    void deps.db.query('SELECT 1 FROM projects WHERE id = $1', [projectId]).then(
      (r) => {
        if (!r.rowCount) socket.close(4404, 'project not found');
      },
      () => socket.close(1011, 'internal error'),
    );
  });
};
