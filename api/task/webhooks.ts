/** Outbound webhook routes: register, list, get, delete, and the delivery log. See docs/webhooks.md. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { notFound, validationError } from '../../lib/errors';
import { BAD_PORTS, badPortOf, badPortReason } from '../../lib/http/badPorts';
import { newId } from '../../lib/ids';
import { getReceiver, receiversOf, type ReceiverRow } from '../../lib/db/webhookReceivers';
import { WEBHOOK_EVENTS, deleteWebhook, getWebhook, insertWebhook, listDeliveries, listWebhooks, type DeliveryRow, type WebhookRow } from '../../lib/db/webhooks';
import { sealSecret } from '../../lib/secretBox';
import { ok, okPage, pagination } from '../http/envelope';
import { Envelope, ErrorResponses, IdParams, Nullable, PagedEnvelope, PageQuery, StringEnum } from '../http/schemas';
import type { TaskPluginOptions } from './deps';

/** The receiver as the deliveries found it: its breaker (activities/webhooks.ts; docs/webhooks.md, The breaker). */
const Receiver = Type.Object({
  state: StringEnum(['ok', 'failing'] as const, { description: '`failing` from the first failed try without an answer until the receiver answers again' }),
  failingSince: Nullable(Type.String({ format: 'date-time', description: 'the first failed try of this failing spell' })),
  nextProbeAt: Nullable(Type.String({ format: 'date-time', description: 'while the breaker is open (deliveries held back): when the next probe may go' })),
  consecutiveFailures: Type.Integer({ minimum: 0 }),
});

const Webhook = Type.Object({
  id: Type.String(),
  webhookId: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  active: Type.Boolean(),
  createdAt: Type.String(),
  receiver: Receiver,
});

const Delivery = Type.Object({
  id: Type.String(),
  webhookId: Type.String(),
  eventSeq: Type.Integer(),
  event: Type.String(),
  attempt: Type.Integer(),
  statusCode: Nullable(Type.Integer()),
  success: Type.Boolean(),
  error: Nullable(Type.String()),
  durationMs: Type.Integer(),
  probe: Type.Boolean({ description: "the try was an open breaker's probe: it does not count towards webhooks.maxTries" }),
  createdAt: Type.String(),
});

/** An absolute http(s) URL without credentials, so the document tells clients what the handler accepts. */
export const WEBHOOK_URL_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@]+(?:[/?#][^\\s]*)?$';

const WEBHOOK_URL_DESCRIPTION =
  'absolute http(s) URL without credentials. Its port must not be one that fetch never connects to (the Fetch standard\'s "bad ports": ' +
  `${[...BAD_PORTS].join(', ')}): such a URL is refused with 400 VALIDATION_ERROR naming the port; serve the receiver on another port`;

const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2000, pattern: WEBHOOK_URL_PATTERN, description: WEBHOOK_URL_DESCRIPTION }),
    events: Type.Array(StringEnum(WEBHOOK_EVENTS), { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true }),
    secret: Type.String({ minLength: 1, maxLength: 500 }),
  },
  { additionalProperties: false },
);

const receiverView = (r: ReceiverRow | undefined) => ({
  state: r && r.consecutive_failures > 0 ? ('failing' as const) : ('ok' as const),
  failingSince: r?.failing_since?.toISOString() ?? null,
  nextProbeAt: r?.probe_at?.toISOString() ?? null,
  consecutiveFailures: r?.consecutive_failures ?? 0,
});
const webhookView = (w: WebhookRow, r: ReceiverRow | undefined) => ({
  id: w.id,
  webhookId: w.id,
  url: w.url,
  events: w.events,
  active: w.active,
  createdAt: w.created_at.toISOString(),
  receiver: receiverView(r),
});
const deliveryView = (d: DeliveryRow) => ({
  id: String(d.id),
  webhookId: d.webhook_id,
  eventSeq: Number(d.event_seq),
  event: d.event_type,
  attempt: d.attempt,
  statusCode: d.status_code,
  success: d.success,
  error: d.error,
  durationMs: d.duration_ms,
  probe: d.probe,
  createdAt: d.created_at.toISOString(),
});

function httpUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validationError('url must be an absolute http(s) URL', { url: 'must be an absolute http(s) URL' });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw validationError('url must use http or https', { url: 'must use http or https' });
  // a URL fetch refuses could never be delivered: every delivery would fail for the whole of webhooks.retryForMs
  const bad = badPortOf(u);
  if (bad !== undefined) throw validationError(`url: ${badPortReason(bad)}: use another port`, { url: `${badPortReason(bad)}: use another port` });
  return u.toString();
}

export const webhookRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const tags = ['webhooks'];
  const Page = Type.Object(PageQuery, { additionalProperties: false });

  app.post('/webhooks', { schema: { tags, body: CreateWebhookBody, response: { 201: Envelope(Webhook), ...ErrorResponses } } }, async (request, reply) => {
    const b = request.body;
    const row = await insertWebhook(deps.db, { id: newId(), url: httpUrl(b.url), events: b.events, sealedSecret: sealSecret(deps.keys.encryption, b.secret) });
    return reply.code(201).send(ok(version, webhookView(row, undefined)));
  });

  app.get('/webhooks', { schema: { tags, querystring: Page, response: { 200: PagedEnvelope(Webhook), ...ErrorResponses } } }, async (request) => {
    const { page, limit } = request.query;
    const { rows, total } = await listWebhooks(deps.db, limit, (page - 1) * limit);
    const receivers = await receiversOf(deps.db, rows.map((w) => w.id));
    return okPage(version, rows.map((w) => webhookView(w, receivers.get(w.id))), pagination(page, limit, total));
  });

  app.get('/webhooks/:id', { schema: { tags, params: IdParams, response: { 200: Envelope(Webhook), ...ErrorResponses } } }, async (request) => {
    const w = await getWebhook(deps.db, request.params.id);
    if (!w) throw notFound(`Webhook ${request.params.id} not found`);
    return ok(version, webhookView(w, await getReceiver(deps.db, w.id)));
  });

  app.delete(
    '/webhooks/:id',
    { schema: { tags, params: IdParams, response: { 200: Envelope(Type.Object({ deleted: Type.Literal(true), webhookId: Type.String() })), ...ErrorResponses } } },
    async (request) => {
      if (!(await deleteWebhook(deps.db, request.params.id))) throw notFound(`Webhook ${request.params.id} not found`);
      return ok(version, { deleted: true as const, webhookId: request.params.id });
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    { schema: { tags, params: IdParams, querystring: Page, response: { 200: PagedEnvelope(Delivery), ...ErrorResponses } } },
    async (request) => {
      if (!(await getWebhook(deps.db, request.params.id))) throw notFound(`Webhook ${request.params.id} not found`);
      const { page, limit } = request.query;
      const { rows, total } = await listDeliveries(deps.db, request.params.id, limit, (page - 1) * limit);
      return okPage(version, rows.map(deliveryView), pagination(page, limit, total));
    },
  );
};
