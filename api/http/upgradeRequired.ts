/**
 * HTTP Upgrade on the task service, whose WebSocket routes come from @fastify/websocket:
 * - A WebSocket route (`websocket: true`) asked without `Upgrade: websocket` (a plain GET, or the HEAD Fastify adds):
 *   @fastify/websocket answered an empty 404, in no service's shape, as if the path did not exist. It is a 426 Upgrade
 *   Required in the service's shape, with `Upgrade: websocket` (RFC 9110 §15.5.22).
 * - A WebSocket route asked with a handshake `ws` refuses (an Upgrade other than `websocket`, a Sec-WebSocket-Key that
 *   is not 16 bytes in base64, a Sec-WebSocket-Version other than 13 or 8, a malformed Sec-WebSocket-Protocol or one
 *   naming a subprotocol twice, a request of HTTP/1.0, which RFC 6455 §4.1 does not allow but `ws` upgraded): `ws`
 *   answered a `text/html` 400 (`Missing or invalid Sec-WebSocket-Key header`). It is the service's 400 naming the
 *   header, before the handshake; a version it does not speak adds `Sec-WebSocket-Version: 13, 8` (RFC 6455 §4.4).
 * - Any other route asked with an Upgrade header (`Upgrade: websocket`, or `Upgrade: h2c` as `curl --http2` sends on
 *   http://): @fastify/websocket accepted the WebSocket handshake (101) and closed the socket at once, or answered
 *   `ws`'s text/html 400 to an h2c one. A server may ignore Upgrade (RFC 9110 §7.8): the request is answered as
 *   without it, its body included (upgradeRequestBody), and its connection then closes (Node parses no further
 *   request on a socket that asked to upgrade).
 * - A WebSocket handshake from a web page whose Origin CORS does not allow (and that is not the service's own origin) is
 *   a 403 in the service's shape: browsers apply no CORS to WebSockets, so `ws://127.0.0.1:8887/ws/events` opened from
 *   any site the user visited was accepted and read every event (session 46's outside round).
 * Install after registering @fastify/websocket, so this runs after its own route hook.
 */
import { type Duplex, PassThrough, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, upgradeRequired } from '../../lib/errors';

/** What `ws` accepts as a key: 16 bytes in base64 (RFC 6455 §4.2.1). */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** A subprotocol list: comma-separated tokens (RFC 6455 §4.1; `ws` refuses anything else). */
const PROTOCOLS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*,[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*$/;

/** Why `ws` would refuse this handshake, as a 400 naming the header; undefined when it would accept it. */
function handshakeProblem(request: FastifyRequest): AppError | undefined {
  const h = request.headers;
  const refuse = (header: string, what: string, details: Record<string, unknown> = {}) =>
    new AppError(400, 'VALIDATION_ERROR', `WebSocket handshake is invalid: ${header} ${what}`, { [header]: what, ...details });
  // RFC 6455 §4.1: the handshake is an HTTP/1.1 (or later) GET; `ws` upgraded an HTTP/1.0 one (101) all the same
  const { httpVersionMajor: major, httpVersionMinor: minor } = request.raw;
  if (major < 1 || (major === 1 && minor < 1)) {
    return new AppError(400, 'VALIDATION_ERROR', `WebSocket handshake is invalid: it was sent as HTTP/${major}.${minor}; a handshake must be HTTP/1.1 or later (RFC 6455 §4.1)`, {
      httpVersion: 'must be 1.1 or later',
    });
  }
  if (String(h.upgrade ?? '').toLowerCase() !== 'websocket') return refuse('Upgrade', 'must be websocket');
  const key = h['sec-websocket-key'];
  if (typeof key !== 'string' || !KEY.test(key)) return refuse('Sec-WebSocket-Key', 'must be 16 random bytes in base64 (24 characters ending in ==)');
  const version = h['sec-websocket-version'];
  if (version !== '13' && version !== '8') return refuse('Sec-WebSocket-Version', 'must be 13', { supported: ['13', '8'] });
  const protocols = h['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const list = String(protocols).trim();
    if (!PROTOCOLS.test(list)) return refuse('Sec-WebSocket-Protocol', 'must be a comma-separated list of tokens');
    const names = list.split(',').map((p) => p.trim());
    if (new Set(names).size !== names.length) return refuse('Sec-WebSocket-Protocol', 'must not name a subprotocol twice');
  }
  return undefined;
}

/** The socket @fastify/websocket keeps on the raw request of an Upgrade (its own symbol, `ws-socket`). */
function upgradeSocketKey(request: FastifyRequest): symbol | undefined {
  return Object.getOwnPropertySymbols(request.raw).find((s) => s.description === 'ws-socket');
}

/**
 * The 403 for a handshake from a page whose origin may not connect (originMayConnect, api/http/cors.ts): any web page
 * the user opened could otherwise read the task service's streams (in local mode there is no key to stop it).
 */
function originProblem(request: FastifyRequest, mayConnect: (origin: string | undefined, host: string | undefined) => boolean): AppError | undefined {
  const origin = request.headers.origin ?? request.headers['sec-websocket-origin'];
  const value = Array.isArray(origin) ? origin[0] : origin;
  if (mayConnect(value, request.headers.host)) return undefined;
  return new AppError(403, 'FORBIDDEN', `WebSocket handshake is refused: Origin ${String(value).slice(0, 200)} may not connect; open the board from this service, or list the origin in ARMADA_CORS_ORIGINS (cors.origins)`, {
    origin: 'not allowed by the CORS origins',
  });
}

/**
 * The body of a request that asked to upgrade, for a route that answers it as a plain request. Node parses no body
 * of such a request: the bytes that came with its headers are the plugin's `head`, the rest is still on the socket,
 * and the request's own stream is empty, so `POST /api/projects` with `Upgrade: h2c` (what `curl --http2 -d …` sends
 * on http://) and a JSON body was a 400 "Request body size did not match Content-Length" (session 48). This reads
 * Content-Length bytes from both, within the server's request timeout (a 408 after it, as for any request); a
 * chunked body, which Node would have to decode, is a 400 saying what to send.
 */
function upgradeRequestBody(request: FastifyRequest, payload: Readable): Readable {
  const raw = request.raw as unknown as Record<symbol, unknown>;
  const socketKey = request.ws ? upgradeSocketKey(request) : undefined;
  const socket = socketKey ? (raw[socketKey] as Duplex | undefined) : undefined;
  if (!socket) return payload; // every plain request: nothing more to look up
  const headKey = Object.getOwnPropertySymbols(raw).find((s) => s.description === 'ws-head');
  if (request.headers['transfer-encoding'] !== undefined) {
    throw new AppError(400, 'VALIDATION_ERROR', 'Request headers are invalid: a request that asks to upgrade (Upgrade) must send its body with Content-Length, not chunked; or send it without Upgrade', {
      'transfer-encoding': 'not with Upgrade',
    });
  }
  let remaining = Number(request.headers['content-length'] ?? 0);
  const body = new PassThrough();
  if (!(remaining > 0)) {
    body.end();
    return body;
  }
  // the socket is no longer the HTTP server's, so its request timeout no longer applies: the same bound, here
  const timeoutMs = request.server.server.requestTimeout ?? 0;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          stop();
          body.destroy(new AppError(408, 'REQUEST_TIMEOUT', 'The request was not received in time; send it again'));
        }, timeoutMs)
      : undefined;
  timer?.unref();
  const stop = () => {
    clearTimeout(timer);
    socket.off('data', take);
    socket.off('end', ended);
  };
  const take = (chunk: Buffer) => {
    const part = chunk.subarray(0, remaining);
    remaining -= part.length;
    body.write(part);
    if (remaining > 0) return;
    stop();
    body.end();
  };
  // a client that stops short: the body ends short, and the parser's Content-Length check answers its 400
  const ended = () => {
    stop();
    body.end();
  };
  const head = headKey ? (raw[headKey] as Buffer | undefined) : undefined;
  if (head?.length) take(head);
  if (remaining > 0) {
    socket.on('data', take);
    socket.once('end', ended);
    socket.resume();
  }
  return body;
}

export function installUpgradeRequired(app: FastifyInstance, mayConnect: (origin: string | undefined, host: string | undefined) => boolean = () => true): void {
  // Node parses no further request on a socket whose request asked to upgrade, so an answer to one that is no 101 (a
  // refused handshake, a route that ignores Upgrade) says the connection closes: a client that kept it for its next
  // request got "socket hang up" instead of an answer
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.headers.upgrade !== undefined && reply.statusCode !== 101) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    if (!route.websocket) {
      const own = route.preParsing === undefined ? [] : [route.preParsing].flat();
      route.preParsing = [...own, async (request: FastifyRequest, _reply: FastifyReply, payload: Readable) => upgradeRequestBody(request, payload)];
      route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const key = request.ws ? upgradeSocketKey(request) : undefined;
        if (key) {
          // answered as a plain request: the plugin upgrades any request whose raw request holds the socket, and
          // destroys it after the answer when `request.ws`; this connection then closes once the answer is out
          const raw = request.raw as unknown as Record<symbol, { destroy(): void } | undefined>;
          const socket = raw[key];
          delete raw[key];
          request.ws = false;
          reply.header('connection', 'close');
          reply.raw.once('finish', () => socket?.destroy());
          reply.raw.once('close', () => socket?.destroy());
        }
        return handler.call(this, request, reply);
      };
      return;
    }
    route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      if (request.ws) {
        const problem = handshakeProblem(request) ?? originProblem(request, mayConnect);
        if (!problem) return handler.call(this, request, reply);
        reply.header('connection', 'close'); // the socket asked to upgrade: Node parses no further request on it
        if (problem.details?.supported) reply.header('sec-websocket-version', '13, 8');
        throw problem;
      }
      reply.header('upgrade', 'websocket').header('connection', 'upgrade');
      return reply.send(upgradeRequired(`${request.url.split('?')[0]} is a WebSocket endpoint: connect with Upgrade: websocket`));
    };
  });
}
