/**
 * One error handler per service style. Both classify an error the same way; the task service answers the
 * envelope `{success:false, error:{code,message,details}}`, the others `{detail}`. No stack trace ever leaves.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { errorBody } from './envelope';
import { isAppError } from '../../lib/errors';
import { isPostgresUnavailable, postgresLoginRefusedMessage, postgresUnavailableMessage } from '../../lib/db/pool';
import { isTemporalUnreachable, TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS, TEMPORAL_OVERLOADED_MESSAGE, temporalRefusal } from '../../lib/temporal/client';
import { MAX_PATH_PARAM_LENGTH } from './inputPolicy';
import { invalidPart, validationDetails } from './validation';

export interface ClassifiedError {
  statusCode: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  /** true when the error is ours (a 5xx other than 503) and must be logged with its stack */
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

/** SQLSTATE 40P01 (deadlock detected) and 40001 (serialization failure): the transaction was rolled back whole. */
function isConcurrencyFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === '40P01' || code === '40001';
}

/**
 * PostgreSQL stopped one statement of the request, and the transaction with it, for a limit of the server's, not the
 * request's fault: SQLSTATE 57014 (a `statement_timeout`, or an administrator's `pg_cancel_backend`) and 55P03 (a
 * `lock_timeout`: a lock held by another transaction too long). The API's pool sets both on its connections
 * (config.apiDatabaseLimits, lib/db/pool.ts sessionLimits); the server, its database or role may set their own.
 * Nothing of the request was written, and it may succeed again: what the client is told, or undefined for any other
 * error.
 */
function statementStopped(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === '57014') return 'The database (PostgreSQL) cancelled the request\'s statement (its statement_timeout, or an administrator\'s cancel); nothing was written; try again';
  if (code === '55P03') return 'The database (PostgreSQL) could not get a lock held by another transaction within its lock_timeout; nothing was written; try again';
  return undefined;
}

/** The 5xx answers an AppError gives on purpose about something outside the service (logged without a stack). */
export const UPSTREAM_ANSWERS: ReadonlySet<number> = new Set([502, 503, 504]);

export function classifyError(err: unknown): ClassifiedError {
  // a 503 is something unavailable that passes (a dependency known down, Temporal or another service unreachable),
  // and a 502 or 504 an upstream's failure (a flow platform's error, a redirect elsewhere, its timeout), each thrown
  // on purpose: an answer, not a failure of ours
  if (isAppError(err)) return { statusCode: err.statusCode, code: err.code, message: err.message, details: err.details, internal: err.statusCode >= 500 && !UPSTREAM_ANSWERS.has(err.statusCode) };
  const fe = err as FastifyError & { validation?: ErrorObject[]; validationContext?: string };
  if (fe && Array.isArray(fe.validation)) {
    const details = validationDetails(fe.validation, fe.validationContext);
    const first = Object.entries(details)[0];
    const opening = invalidPart(fe.validationContext);
    return { statusCode: 400, code: 'VALIDATION_ERROR', message: first ? `${opening}: ${first[0]} ${first[1]}` : opening, details, internal: false };
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
  if (isPostgresUnavailable(err)) return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: postgresUnavailableMessage(err), internal: false };
  // logged at error (internal): the operator must act; the client is told it is the service's, not its request's
  const login = postgresLoginRefusedMessage(err);
  if (login) return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: login, internal: true };
  if (isTemporalUnreachable(err)) return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: 'The workflow engine (Temporal) is unavailable; try again', internal: false };
  // Temporal answered, but refused the call for a limit of its own or failed it inside: it passes, so a 503 (not a 500:
  // nothing of the request was wrong); a failure inside is logged at error for the operator (Temporal's log says why)
  const refusal = temporalRefusal(err);
  if (refusal === 'overloaded') {
    return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: TEMPORAL_OVERLOADED_MESSAGE, details: { retryAfterSeconds: TEMPORAL_OVERLOAD_RETRY_AFTER_SECONDS }, internal: false };
  }
  if (refusal === 'failed') return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: 'The workflow engine (Temporal) failed the call on its side; try again (Temporal\'s own log says why)', internal: true };
  if (isConcurrencyFailure(err)) {
    // PostgreSQL broke a deadlock between this request and a concurrent one (or could not serialise them) and rolled
    // this one back: nothing of it was written, and the same request again succeeds
    return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: 'The request collided with a concurrent change and was rolled back; try again', details: { retryAfterSeconds: 1 }, internal: false };
  }
  const stopped = statementStopped(err);
  if (stopped) return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: stopped, details: { retryAfterSeconds: 1 }, internal: false };
  if (status === 503) return { statusCode: 503, code: 'SERVICE_UNAVAILABLE', message: fe.message || 'Service unavailable', internal: false };
  return { statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error', internal: true };
}

/**
 * Logs an error answer: ours (internal) at error with its stack; a 503 (a dependency down or unreachable, a
 * collision: something that passes) at debug, one line without a stack, since an outage brings one per request and
 * is itself logged once when it begins and once when it ends (lib/runtime/dependencies.ts); a 502 or 504 (an
 * upstream's failure: the operator may want to look at that platform) at warn, one line without a stack; any other
 * (the client's mistake) at info. `code` is the code the answer names, `failed` the message of an internal one.
 */
export function logErrorAnswer(request: FastifyRequest, err: unknown, c: ClassifiedError, opts: { code?: string; failed?: string } = {}): void {
  if (c.internal) request.log.error({ err }, opts.failed ?? 'request failed');
  else if (c.statusCode === 503) request.log.debug({ code: opts.code ?? c.code, statusCode: c.statusCode }, c.message);
  else if (c.statusCode >= 500) request.log.warn({ code: opts.code ?? c.code, statusCode: c.statusCode }, c.message);
  else request.log.info({ code: opts.code ?? c.code, statusCode: c.statusCode }, c.message);
}

/** Where a request for an undeclared method on a known path gets its 405; `allowed(path)` lists the served methods. */
export type AllowedMethods = (path: string) => string[];

/** The 405 message for a request no route serves at a path other methods are served at (and sets `Allow`). */
function methodNotAllowed(request: FastifyRequest, reply: FastifyReply, allowed: AllowedMethods): string | undefined {
  const path = request.url.split('?')[0] ?? '';
  const methods = allowed(path);
  if (methods.length === 0) return undefined;
  reply.header('allow', methods.join(', '));
  return `Method ${request.method} is not allowed on ${path}; allowed: ${methods.join(', ')}`;
}

/**
 * An OPTIONS request that is no CORS preflight (those are answered by api/http/cors.ts) reaches the not-found handler
 * through the preflight route `OPTIONS *`: on a served path it asks which methods are served (RFC 9110 §9.3.7), and
 * gets 204 with `Allow`; true when it was answered so.
 */
function answerOptions(request: FastifyRequest, reply: FastifyReply, allowed: AllowedMethods): boolean {
  if (request.method !== 'OPTIONS') return false;
  const methods = allowed(request.url.split('?')[0] ?? '');
  if (methods.length === 0) return false;
  reply.code(204).header('allow', methods.join(', ')).send();
  return true;
}

/**
 * Fastify reads and checks the body of a request no route serves before the not-found handler runs: a QUERY without
 * a Content-Type, malformed JSON, a body that is not UTF-8 or too large, a NUL in the query failed there, and were
 * answered 400, 413 or 415 on a path that does not exist (on a known path with a method it does not serve, the 405
 * was given only for Fastify's own content-type errors). Any such client error of a request without a route still
 * means "no route for this method": 405 on a known path, else 404, as the same request without a body gets. Only
 * errors from the body stage on (preParsing, parsing, preValidation) count: what `onRequest` refuses is about the
 * request itself, not its route (a missing or invalid Host stays its 400; authentication its 401, rate limits their
 * 429, a dependency down its 503), so a client without credentials learns nothing about the paths and methods.
 * Returns the predicate; install before any other preParsing hook.
 */
const UNROUTED_INPUT_STATUSES = new Set([400, 413, 415]);
function unroutedInputCheck(app: FastifyInstance): (request: FastifyRequest, c: ClassifiedError) => boolean {
  const pastOnRequest = new WeakSet<FastifyRequest>();
  app.addHook('preParsing', async (request) => {
    pastOnRequest.add(request);
  });
  return (request, c) => request.is404 && pastOnRequest.has(request) && UNROUTED_INPUT_STATUSES.has(c.statusCode);
}

/**
 * The 400 for what Fastify's router rejects before any route runs (a path parameter longer than the router accepts,
 * a malformed percent-encoding), in the service's shape (Fastify's `frameworkErrors` option).
 */
export function frameworkErrorMessage(err: FastifyError): string {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return `Request path is invalid: a path parameter is too long (at most ${MAX_PATH_PARAM_LENGTH} characters)`;
  if (err.code === 'FST_ERR_BAD_URL') return 'Request path is invalid: malformed percent-encoding';
  return 'Bad request';
}

/**
 * Retry-After (seconds) of a 503 whose error names no time of its own. A 503 is something that passes: a dependency
 * down (PostgreSQL refused or known down, Temporal unreachable, another service), a collision, a busy server; the
 * dependency probes look every second, and a client told nothing retried at once or gave up.
 */
export const RETRY_AFTER_SECONDS = 1;

/** A 429 that knows when to try again says so in Retry-After (seconds); every 503 does (RETRY_AFTER_SECONDS unless its error says). */
export function setRetryAfter(reply: FastifyReply, err: unknown, c: ClassifiedError): void {
  const own = (err as { retryAfter?: unknown } | undefined)?.retryAfter ?? c.details?.retryAfterSeconds;
  const retryAfter = typeof own === 'number' && own > 0 ? own : c.statusCode === 503 ? RETRY_AFTER_SECONDS : undefined;
  if ((c.statusCode === 429 || c.statusCode === 503) && retryAfter !== undefined) reply.header('retry-after', retryAfter);
}

const routeNotFound = (request: FastifyRequest) => `Route ${request.method} ${request.url.split('?')[0]} not found`;
const detailNotFound = (request: FastifyRequest) => `Not Found: ${request.method} ${request.url.split('?')[0]}`;

/** Task service: the envelope. `version` fills meta.version. */
export function installEnvelopeErrors(app: FastifyInstance, version: string, allowed: AllowedMethods): void {
  const inputOfUnroutedRequest = unroutedInputCheck(app);
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const c = classifyError(err);
    if (inputOfUnroutedRequest(request, c)) {
      const notAllowed = methodNotAllowed(request, reply, allowed);
      if (notAllowed) return reply.code(405).send(errorBody(version, 'METHOD_NOT_ALLOWED', notAllowed));
      return reply.code(404).send(errorBody(version, 'NOT_FOUND', routeNotFound(request)));
    }
    logErrorAnswer(request, err, c);
    setRetryAfter(reply, err, c);
    return reply.code(c.statusCode).send(errorBody(version, c.code, c.message, c.details));
  });
  app.setNotFoundHandler((request, reply) => {
    if (answerOptions(request, reply, allowed)) return reply;
    const notAllowed = methodNotAllowed(request, reply, allowed);
    if (notAllowed) return reply.code(405).send(errorBody(version, 'METHOD_NOT_ALLOWED', notAllowed));
    return reply.code(404).send(errorBody(version, 'NOT_FOUND', routeNotFound(request)));
  });
}

/** Scheduler, agents, traces: `{detail}` (FastAPI style). */
export function installDetailErrors(app: FastifyInstance, allowed: AllowedMethods): void {
  const inputOfUnroutedRequest = unroutedInputCheck(app);
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const c = classifyError(err);
    if (inputOfUnroutedRequest(request, c)) {
      const notAllowed = methodNotAllowed(request, reply, allowed);
      if (notAllowed) return reply.code(405).send({ detail: notAllowed });
      return reply.code(404).send({ detail: detailNotFound(request) });
    }
    logErrorAnswer(request, err, c);
    setRetryAfter(reply, err, c);
    return reply.code(c.statusCode).send({ detail: c.message });
  });
  app.setNotFoundHandler((request, reply) => {
    if (answerOptions(request, reply, allowed)) return reply;
    const notAllowed = methodNotAllowed(request, reply, allowed);
    if (notAllowed) return reply.code(405).send({ detail: notAllowed });
    return reply.code(404).send({ detail: detailNotFound(request) });
  });
}

/**
 * What Node's HTTP parser refuses before any request exists (headers past 64 KiB, a malformed request line or
 * header, a request that timed out): the status, the reason phrase and a message saying what to do. The 64 KiB hold
 * the request line too: a long URL is refused there, and its 431 said only "send smaller headers" (session 49). Fastify's
 * default answered these with its own `{error, message, statusCode}`, not the service's shape.
 */
export function clientErrorAnswer(err: { code?: string }): { status: number; reason: string; message: string } {
  if (err.code === 'HPE_HEADER_OVERFLOW') return { status: 431, reason: 'Request Header Fields Too Large', message: 'The request line and headers are larger than 64 KiB in all; send a shorter URL or smaller headers' };
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, reason: 'Request Timeout', message: 'The request was not received in time; send it again' };
  return { status: 400, reason: 'Bad Request', message: `Malformed HTTP request (${err.code ?? 'parse error'}); send HTTP/1.1 with well-formed headers` };
}

/** CONNECT: a tunnel, which no service gives (see `app.server.on('connect')` in api/http/baseApp.ts). */
export function connectAnswer(): { status: number; reason: string; message: string } {
  return { status: 400, reason: 'Bad Request', message: 'CONNECT is not supported: this service is no proxy; send GET, POST, … to one of its paths' };
}

/**
 * A request whose `Expect` is not `100-continue`, the one expectation HTTP defines (RFC 9110 §10.1.1): Node refuses it
 * before any route with a 417 and an empty body.
 */
export function expectationFailedAnswer(expect: string | undefined): { status: number; message: string } {
  return { status: 417, message: `Expect: ${expect ?? ''} is not supported; send no Expect header, or Expect: 100-continue` };
}

/**
 * @fastify/websocket's `errorHandler`: an error on an open socket. A client that breaks the WebSocket protocol (ws
 * codes such errors `WS_ERR_…`: a message over `maxPayload`, a text frame that is not UTF-8) has already been sent
 * the close code RFC 6455 gives it (1009, 1007) and ws completes the close: the client's mistake, logged at info
 * without a stack, as a 4xx is. The plugin's default logged each as an error with its stack trace, so any client could
 * fill the error log. Anything else is ours: logged as an error, and the socket ends.
 */
export function websocketErrorHandler(error: Error & { code?: unknown }, socket: { terminate(): void }, request: FastifyRequest): void {
  if (typeof error.code === 'string' && error.code.startsWith('WS_ERR_')) {
    request.log.info({ code: error.code, reason: error.message }, 'websocket closed: the client broke the protocol');
    return;
  }
  request.log.error({ err: error }, 'websocket failed');
  socket.terminate();
}
