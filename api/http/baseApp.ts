/**
 * The Fastify instance every service starts from: logger with request ids, strict validation, the service's
 * error style, request metrics, GET /health (readiness), GET /health/live (liveness) and GET /metrics.
 */
import { installJsonBodyParser } from './jsonBody';
import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import type { Metrics } from '../../lib/metrics';
import { DeadConnection } from '../../lib/db/deadConnections';
import { isPostgresUnavailable, postgresRefusingConnectionsReason } from '../../lib/db/pool';
import type { DependencyState } from '../../lib/runtime/dependencies';
import { installDependencyGate } from './dependencyGate';
import { installStoppingAnswer } from './stoppingAnswer';
import { installStreamsEndOnStop } from './streamsEndOnStop';
import { allowedMethodsOf } from './allowedMethods';
import { errorBody } from './envelope';
import { clientErrorAnswer, connectAnswer, expectationFailedAnswer, frameworkErrorMessage, installDetailErrors, installEnvelopeErrors, UPSTREAM_ANSWERS } from './errorHandlers';
import { installInputPolicy, MAX_BODY_BYTES, MAX_HEADER_LINES, MAX_PATH_PARAM_LENGTH } from './inputPolicy';
import { createLazySchemas, registerLazySchemas } from './lazySchemas';
import { installOpenApi, registeredRoutes } from './openapi';
import { originForm } from './requestTarget';
import { validatorCompiler } from './validation';

export type App = FastifyInstance;

export interface BaseAppOptions {
  service: 'task' | 'scheduler' | 'agents' | 'traces';
  logger: Logger;
  metrics: Metrics;
  version: string;
  errorStyle: 'envelope' | 'detail';
  /** Checked by GET /health; a failing check answers 503. */
  healthCheck?: () => Promise<Record<string, unknown>>;
  /** Dependencies known down make /health answer 503 at once, naming them, without running healthCheck. */
  dependencies?: DependencyState;
  bodyLimit?: number;
  /**
   * How long a client has to send a whole request (config.requestTimeoutMs, whose default is the default here); then
   * a 408 in the service's shape. Fastify's default is no limit: a body that stopped short of its Content-Length held
   * its connection forever.
   */
  requestTimeoutMs?: number;
  /**
   * The body of a 400 the router gives before any route runs (a path parameter too long for it, a malformed
   * percent-encoding), for paths whose routes document a shape of their own; undefined for the service's shape.
   */
  routerErrorBody?: (path: string, message: string) => object | undefined;
}

/** A health check that does not answer within this long answers 503 (health stays cheap and never hangs). */
// Generous: a dependency known down answers 503 at once without running the check (see dependencies); this bound
// only catches a check that hangs, and must not turn a busy machine's slow SELECT 1 into "unavailable".
const HEALTH_CHECK_TIMEOUT_MS = 5000;

/**
 * Runs `check`, once more when its pooled connection was found dead on the way and closed (lib/db/deadConnections.ts,
 * about 2 s after its statement was sent): PostgreSQL answers others (the probes would have called it down
 * otherwise), and the pool has dropped that connection and the idle ones opened with it, so the second try tells
 * whether this service can reach its database. Before, the check waited out its 5 s deadline on such a connection
 * and answered 503, as if the server were unavailable.
 */
async function healthCheckOnLiveConnection(check: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof DeadConnection) return check();
    throw err;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The envelope code of a parser refusal (api/http/errorHandlers.ts, clientErrorAnswer). */
const CLIENT_ERROR_CODES: Record<number, string> = { 400: 'VALIDATION_ERROR', 408: 'REQUEST_TIMEOUT', 431: 'VALIDATION_ERROR' };

export function createBaseApp(opts: BaseAppOptions) {
  const requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  // route schemas compiled on a route's first request (lazySchemas.ts)
  const schemas = createLazySchemas(validatorCompiler);
  const app = Fastify({
    schemaController: { compilersFactory: { buildSerializer: schemas.buildSerializer as never } },
    loggerInstance: opts.logger.child({ service: opts.service }) as FastifyBaseLogger,
    bodyLimit: opts.bodyLimit ?? MAX_BODY_BYTES,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    logController: new LogController({ disableRequestLogging: true }),
    // an absolute-form target (`GET http://host/api/x`) is read as its path and query, before routing and every hook
    rewriteUrl: (req) => originForm(req.url ?? '/'),
    // our own 503 while stopping (installStoppingAnswer below), in the service's shape: Fastify's has a shape of its own
    return503OnClosing: false,
    // Node's default (16 KiB) answers 431 before validation to a query within the documented maxLengths (4096
    // characters of 4-byte UTF-8 are 48 KiB percent-encoded); with room for those, such a request gets its 400.
    // A missing Host is refused by us (in the service's shape, api/http/inputPolicy.ts), not by Node with a bare 400.
    // The request timeout takes effect only when Node's server is created with it (Fastify sets it on the server
    // afterwards too, where it alone does nothing); expired requests are looked for every quarter of it (Node's
    // default: every 30 s), and headers get at most as long (Node: the lesser of 60 s and it).
    http: {
      maxHeaderSize: 64 * 1024,
      requireHostHeader: false,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 4))),
    },
    requestTimeout: requestTimeoutMs,
    forceCloseConnections: 'idle',
    // A `__proto__` or `constructor.prototype` key in a JSON body is dropped rather than answered with 400: the
    // documents allow any key in free-form objects (metadata, input), and a schema-valid body must be accepted.
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    // The schemas' `maxLength` (MAX_PATH_PARAM_LENGTH characters) is the limit; the router's own check, in UTF-16
    // units, only stops what the schema would refuse anyway (an astral character counts twice here).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2 * MAX_PATH_PARAM_LENGTH },
    // the parser's refusals in the service's shape (Fastify's default has a shape of its own), then the socket closes
    clientErrorHandler(err, socket) {
      if ((err as { code?: string }).code === 'ECONNRESET' || socket.destroyed) return;
      const a = clientErrorAnswer(err as { code?: string });
      const body = JSON.stringify(opts.errorStyle === 'envelope' ? errorBody(opts.version, CLIENT_ERROR_CODES[a.status] ?? 'VALIDATION_ERROR', a.message) : { detail: a.message });
      if (socket.writable) socket.write(`HTTP/1.1 ${a.status} ${a.reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
      socket.destroy(err);
    },
    frameworkErrors: (err, request, reply: FastifyReply) => {
      const message = frameworkErrorMessage(err);
      const own = opts.routerErrorBody?.(request.url.split('?')[0] ?? '', message);
      return reply.code(400).send(own ?? (opts.errorStyle === 'envelope' ? errorBody(opts.version, 'VALIDATION_ERROR', message) : { detail: message }));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Node's parser keeps this many header lines of a request and drops the rest without a word (its default: 1000); one
  // more than the services take, so the input policy sees that a request had too many and answers 431 (inputPolicy.ts)
  app.server.maxHeadersCount = MAX_HEADER_LINES + 1;

  // an Expect other than 100-continue: Node's own 417 had an empty body
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const a = expectationFailedAnswer(request.headers.expect);
    const body = JSON.stringify(opts.errorStyle === 'envelope' ? errorBody(opts.version, 'VALIDATION_ERROR', a.message) : { detail: a.message });
    response.writeHead(a.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
  });

  // `Expect: 100-continue` (RFC 9110 §10.1.1): the 100 goes when the body is about to be read (the preParsing hook
  // below), not on arrival, as Node sends it without a listener here. A request answered before that (no key, a
  // declared body past the limit, an unknown path) gets its final answer at once and the connection closes (Node does
  // so for an expectation it did not meet), so the client never sends the body. Before (session 50's outside round),
  // a POST declaring 10 GiB was told "100 Continue" and then 413, and one without the key "100 Continue" and then 401.
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => app.server.emit('request', request, response));

  // CONNECT asks for a tunnel to `host:port` (RFC 9110 §9.3.6), which no service gives: with no listener Node closed
  // the connection without a word. Its target is no path of the service, so it is a 400, like the parser's refusals
  // (given before authentication, it says nothing about the paths).
  app.server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined); // a client gone meanwhile
    const a = connectAnswer();
    const body = JSON.stringify(opts.errorStyle === 'envelope' ? errorBody(opts.version, 'VALIDATION_ERROR', a.message) : { detail: a.message });
    if (!socket.writable) return socket.destroy();
    socket.end(`HTTP/1.1 ${a.status} ${a.reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy());
  });

  installOpenApi(app, { service: opts.service, version: opts.version, requestTimeoutMs });
  app.setValidatorCompiler(schemas.validatorCompiler);
  registerLazySchemas(app, schemas);
  app.removeContentTypeParser('text/plain'); // JSON only: anything else is a 415
  installJsonBodyParser(app, { onProtoPoisoning: 'remove', onConstructorPoisoning: 'remove' }); // and UTF-8 only
  const allowed = allowedMethodsOf(() => registeredRoutes(app));
  if (opts.errorStyle === 'envelope') installEnvelopeErrors(app, opts.version, allowed);
  else installDetailErrors(app, allowed);
  installStoppingAnswer(app);
  installStreamsEndOnStop(app);
  installInputPolicy(app);
  if (opts.dependencies) installDependencyGate(app, opts.dependencies);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // the 100 of `Expect: 100-continue` (the checkContinue listener above, the only way such a request reaches here: any
  // other expectation is Node's 417). Whether it was sent already is Node's own mark on the response (`_sent100`; Node
  // also closes the connection after a final answer given without the 100); the header decides whether one is due, so
  // a Node without those marks still sends it.
  app.addHook('preParsing', async (request, reply, payload) => {
    const raw = reply.raw as ServerResponse & { _sent100?: boolean };
    const expects = /^\s*100-continue\s*$/i.test(String(request.headers.expect ?? ''));
    if (expects && !raw._sent100 && !(Number(request.headers['content-length']) > request.routeOptions.bodyLimit)) raw.writeContinue();
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { service: opts.service, method: request.method, route, status_code: String(reply.statusCode) };
    opts.metrics.httpRequests.inc(labels);
    opts.metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    // a 503 (a dependency down, /health saying so) is an expected answer, logged at debug where it is given: an outage
    // must not add a warning per request (it is logged once when it begins and once when it ends); a 502 or 504 (an
    // upstream's failure) is logged at warn where it is given (logErrorAnswer), once
    if (reply.statusCode >= 500 && !UPSTREAM_ANSWERS.has(reply.statusCode)) request.log.warn({ method: request.method, route, statusCode: reply.statusCode }, 'request answered 5xx');
  });

  // liveness: the process runs and its event loop answers, whatever its dependencies do (/health is readiness: a 503
  // while PostgreSQL or Temporal is down, and a liveness probe on it restarted every replica of an outage for nothing)
  app.get('/health/live', { schema: { hide: true } as object }, async () => ({ status: 'alive', service: opts.service, version: opts.version }));

  app.get('/health', { schema: { hide: true } as object }, async (_request, reply) => {
    const unavailable = { status: 'unavailable', service: opts.service, version: opts.version };
    const down = opts.dependencies?.down() ?? [];
    // and why each is down (the probe's or the supervisor's words), e.g. Temporal's persistence read getting no answer
    if (down.length) return reply.code(503).send({ ...unavailable, down, reasons: Object.fromEntries(down.map((d) => [d, opts.dependencies?.downReason(d) ?? 'unknown'])) });
    let timer: NodeJS.Timeout | undefined;
    try {
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`health check did not answer within ${HEALTH_CHECK_TIMEOUT_MS} ms`)), HEALTH_CHECK_TIMEOUT_MS);
      });
      const checks = opts.healthCheck ? await Promise.race([healthCheckOnLiveConnection(opts.healthCheck), late]) : {};
      // served on the pool's open connections while PostgreSQL refuses new ones (the probes'): ready, with the warning
      const refusing = opts.dependencies?.refusingConnections();
      return { status: 'ok', service: opts.service, version: opts.version, ...checks, ...(refusing ? { warnings: [refusing] } : {}) };
    } catch (err) {
      // unreachable, or refusing this process for want of a resource (no connection slot free: SQLSTATE 53300): either
      // way the service cannot reach PostgreSQL now, and says so
      // no connection slot free for this check either: said for what it is, with what to do (not the driver's words)
      const refusing = (err as { code?: unknown } | undefined)?.code === '53300' ? postgresRefusingConnectionsReason(err) : undefined;
      return reply.code(503).send({ ...unavailable, ...(isPostgresUnavailable(err) ? { down: ['postgres'] } : {}), error: refusing ?? (err as Error).message });
    } finally {
      clearTimeout(timer);
    }
  });
  app.get('/metrics', { schema: { hide: true } as object }, async (_request, reply) => {
    reply.header('content-type', opts.metrics.registry.contentType);
    return opts.metrics.registry.metrics();
  });
  return app;
}
