/** Request and response schemas of the trace routes (service D). */
import { Type } from 'typebox';
import { TRACE_STATUSES } from '../../lib/db/traces';
import { PHONE_PATTERN } from '../../lib/phone';
import { NAME_PATTERN, TEXT_PATTERN } from '../http/inputPolicy';
import { Nullable, Offset, StringEnum, Timestamp } from '../http/schemas';

/** `{detail}`: the error body of the detail-style services. */
export const DetailError = Type.Object({ detail: Type.String() });
export const DetailErrorResponses = { 400: DetailError, 401: DetailError, 404: DetailError, 500: DetailError };

const JsonObject = Type.Record(Type.String(), Type.Unknown());
const Status = StringEnum(TRACE_STATUSES);

export const Payload = Type.Object({ headers: JsonObject, body: JsonObject });

export const TraceListItem = Type.Object({
  id: Type.String(),
  messageId: Type.String(),
  instance: Type.String(),
  to: Type.String({ description: 'normalised E.164 (+<digits>)' }),
  message: Type.String(),
  status: Status,
  sentAt: Type.String(),
  deliveredAt: Nullable(Type.String()),
  readAt: Nullable(Type.String()),
  failedAt: Nullable(Type.String()),
});

export const TraceDetail = Type.Object({ ...TraceListItem.properties, payload: Payload });

/**
 * A messageId or instance: not blank (only white space), which no sender means and which would make an idempotency
 * key of nothing; kept as sent otherwise (trimming would merge keys that differ only in their blanks).
 */
const KeyText = (description: string) => Type.String({ minLength: 1, maxLength: 255, pattern: NAME_PATTERN, description });

export const IngestTraceBody = Type.Object(
  {
    messageId: KeyText('not blank (only white space), no control or bidi override characters; stored as sent'),
    instance: KeyText('not blank (only white space), no control or bidi override characters; stored as sent'),
    to: Type.String({ minLength: 1, maxLength: 40, pattern: PHONE_PATTERN, description: 'E.164-like, e.g. +1 (555) 010-2000; stored normalised' }),
    message: Type.String({ maxLength: 65_536, pattern: TEXT_PATTERN }),
    status: Type.Optional(StringEnum(TRACE_STATUSES, { default: 'sent' })),
    sentAt: Type.Optional(Timestamp),
    payload: Type.Optional(
      Type.Object({ headers: Type.Optional(JsonObject), body: Type.Optional(JsonObject) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

export const StatusReceiptBody = Type.Object(
  { status: Status, timestamp: Type.Optional(Timestamp) },
  { additionalProperties: false },
);

export const TraceListQuery = Type.Object({
  instance: Type.Optional(KeyText('not blank (only white space), as ingestion requires')),
  phone: Type.Optional(Type.String({ minLength: 1, maxLength: 40, pattern: PHONE_PATTERN, description: 'E.164-like, any accepted form' })),
  status: Type.Optional(Status),
  limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
  offset: Offset,
});

export const TraceList = Type.Object({
  traces: Type.Array(TraceListItem),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
});

export const AnalyticsQuery = Type.Object({
  days: Type.Integer({ minimum: 1, maximum: 366, default: 7, description: 'UTC calendar days, today included' }),
});

const StatusCounts = Type.Object({ sent: Type.Integer(), delivered: Type.Integer(), read: Type.Integer(), failed: Type.Integer() });

export const Analytics = Type.Object({
  period: Type.Object({ start: Type.String(), end: Type.String() }),
  totalMessages: Type.Integer(),
  byStatus: StatusCounts,
  byInstance: Type.Record(Type.String(), Type.Integer()),
  byDay: Type.Array(Type.Object({ date: Type.String(), count: Type.Integer(), byStatus: StatusCounts })),
});

export const TraceIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
