/** Trace routes: /api/v1/traces… (ingestion, status receipts, list, single trace, analytics). */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { counter } from '../../lib/metrics';
import { notFound, validationError } from '../../lib/errors';
import { isUuid, newId } from '../../lib/ids';
import { normalisePhone } from '../../lib/phone';
import { applyStatusReceipt, getTrace, ingestTrace, listTraces, traceAnalytics, type TraceRow } from '../../lib/db/traces';
import type { DetailServiceDeps } from '../detailServiceDeps';
import {
  Analytics,
  AnalyticsQuery,
  DetailErrorResponses,
  IngestTraceBody,
  StatusReceiptBody,
  TraceDetail,
  TraceIdParams,
  TraceList,
  TraceListQuery,
} from './traceSchemas';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function traceListItem(t: TraceRow) {
  return {
    id: t.id,
    messageId: t.message_id,
    instance: t.instance,
    to: t.to_phone,
    message: t.message,
    status: t.status,
    sentAt: t.sent_at.toISOString(),
    deliveredAt: iso(t.delivered_at),
    readAt: iso(t.read_at),
    failedAt: iso(t.failed_at),
  };
}

export function traceDetail(t: TraceRow) {
  return { ...traceListItem(t), payload: { headers: t.payload_headers, body: t.payload_body } };
}

function phoneOrThrow(value: string, field: string): string {
  const phone = normalisePhone(value);
  if (!phone) throw validationError(`${field} must be an E.164 phone number such as +15550102000 (spaces, dashes, dots and parentheses are allowed)`, { [field]: 'is not an E.164-like phone number' });
  return phone;
}

export interface TracePluginOptions {
  deps: DetailServiceDeps;
}

export const traceRoutes: FastifyPluginAsync<TracePluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const ingested = counter(deps.metrics.registry, 'armada_traces_ingested_total', 'Traces ingested (new: first ingestion, repeat: idempotent repeat)', ['result']);
  const receipts = counter(deps.metrics.registry, 'armada_trace_status_receipts_total', 'Trace status receipts received', ['status']);

  app.post(
    '/traces',
    { schema: { tags: ['traces'], body: IngestTraceBody, response: { 200: TraceDetail, 201: TraceDetail, ...DetailErrorResponses } } },
    async (request, reply) => {
      const b = request.body;
      const { row, inserted } = await ingestTrace(deps.db, {
        id: newId(),
        messageId: b.messageId,
        instance: b.instance,
        toPhone: phoneOrThrow(b.to, 'to'),
        message: b.message,
        status: b.status ?? 'sent',
        sentAt: b.sentAt ? new Date(b.sentAt) : null,
        headers: b.payload?.headers ?? {},
        body: b.payload?.body ?? {},
      });
      ingested.inc({ result: inserted ? 'new' : 'repeat' });
      return reply.code(inserted ? 201 : 200).send(traceDetail(row));
    },
  );

  app.post(
    '/traces/:id/status',
    { schema: { tags: ['traces'], params: TraceIdParams, body: StatusReceiptBody, response: { 200: TraceDetail, ...DetailErrorResponses } } },
    async (request) => {
      const { id } = request.params;
      const row = isUuid(id) ? await applyStatusReceipt(deps.db, id, request.body.status, request.body.timestamp ? new Date(request.body.timestamp) : null) : undefined;
      if (!row) throw notFound(`Trace ${id} not found`);
      receipts.inc({ status: request.body.status });
      return traceDetail(row);
    },
  );

  app.get(
    '/traces',
    { schema: { tags: ['traces'], querystring: TraceListQuery, response: { 200: TraceList, ...DetailErrorResponses } } },
    async (request) => {
      const q = request.query;
      const { rows, total } = await listTraces(
        deps.db,
        { instance: q.instance, phone: q.phone === undefined ? undefined : phoneOrThrow(q.phone, 'phone'), status: q.status },
        q.limit,
        q.offset,
      );
      return { traces: rows.map(traceListItem), total, limit: q.limit, offset: q.offset };
    },
  );

  // A static segment: the router prefers it to /traces/:id whatever the registration order.
  app.get(
    '/traces/analytics',
    { schema: { tags: ['traces'], querystring: AnalyticsQuery, response: { 200: Analytics, ...DetailErrorResponses } } },
    async (request) => traceAnalytics(deps.db, request.query.days),
  );

  app.get(
    '/traces/:id',
    { schema: { tags: ['traces'], params: TraceIdParams, response: { 200: TraceDetail, ...DetailErrorResponses } } },
    async (request) => {
      const { id } = request.params;
      const row = isUuid(id) ? await getTrace(deps.db, id) : undefined;
      if (!row) throw notFound(`Trace ${id} not found`);
      return traceDetail(row);
    },
  );
};
