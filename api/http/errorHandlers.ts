/**
 * One error handler per service style. Both classify an error the same way; the task service answers the
 * envelope `{success:false, error:{code,message,details}}`, the others `{detail}`. No stack trace ever leaves.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { errorBody } from './envelope';
import { isAppError } from '../../lib/errors';
import { validationDetails } from './validation';

export interface ClassifiedError {
  statusCode: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  /** true when the error is ours (5xx) and must be logged with its stack */
  internal: boolean;
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'VALIDATION_ERROR',
  406: 'VALIDATION_ERROR',
  409: 'CONFLICT',
  411: 'VALIDATION_ERROR',
  413: 'VALIDATION_ERROR',
  415: 'VALIDATION_ERROR',
  429: 'RATE_LIMIT',
};

export function classifyError(err: unknown): ClassifiedError {
  if (isAppError(err)) return { statusCode: err.statusCode, code: err.code, message: err.message, details: err.details, internal: err.statusCode >= 500 };
  const fe = err as FastifyError & { validation?: ErrorObject[]; validationContext?: string };
  if (fe && Array.isArray(fe.validation)) {
    const details = validationDetails(fe.validation, fe.validationContext);
    const first = Object.entries(details)[0];
    const where = fe.validationContext === 'body' ? 'Request body' : `Request ${fe.validationContext ?? 'input'}`;
    return { statusCode: 400, code: 'VALIDATION_ERROR', message: first ? `${where} is invalid: ${first[0]} ${first[1]}` : `${where} is invalid`, details, internal: false };
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    let message = fe.message || 'Bad request';
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') message = 'Unsupported Content-Type: send application/json';
    else if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') message = 'Request body is too large';
    else if (fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') message = 'Body cannot be empty when Content-Type is application/json';
    else if (err instanceof SyntaxError || fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY') message = 'Malformed JSON in request body';
    return { statusCode: status, code: CODE_BY_STATUS[status] ?? 'INVALID_REQUEST', message, internal: false };
  }
  if (status === 503) return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: fe.message || 'Service unavailable', internal: false };
  return { statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error', internal: true };
}

function logIfInternal(request: FastifyRequest, err: unknown, c: ClassifiedError): void {
  if (c.internal) request.log.error({ err }, 'request failed');
  else request.log.info({ code: c.code, statusCode: c.statusCode }, c.message);
}

/** Task service: the envelope. `version` fills meta.version. */
export function installEnvelopeErrors(app: FastifyInstance, version: string): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const c = classifyError(err);
    logIfInternal(request, err, c);
    const retryAfter = (err as { retryAfter?: number }).retryAfter ?? c.details?.retryAfterSeconds;
    if ((c.statusCode === 429 || c.statusCode === 503) && typeof retryAfter === 'number' && retryAfter > 0) reply.header('retry-after', retryAfter);
    return reply.code(c.statusCode).send(errorBody(version, c.code, c.message, c.details));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody(version, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`)),
  );
}

/** Scheduler, agents, traces: `{detail}` (FastAPI style). */
export function installDetailErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const c = classifyError(err);
    logIfInternal(request, err, c);
    return reply.code(c.statusCode).send({ detail: c.message });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ detail: `Not Found: ${request.method} ${request.url.split('?')[0]}` }));
}
