/**
 * One Server-Sent Events response over the raw Node response (the route hijacks the reply). Headers already set on
 * the reply by hooks (CORS, x-request-id) are written with the SSE ones. A `: keep-alive` comment goes out every
 * `keepAliveMs` so proxies and browsers do not drop an idle stream. Backpressure: `write` resolves only once the
 * socket has taken the event (it waits for 'drain' when the kernel and Node buffers are full), so a caller that
 * awaits each write never holds more than what it is about to write; a client that stops reading stalls its own
 * stream, not the server's memory. A client that goes away aborts `signal` and ends any pending write. A HEAD request
 * gets the headers and an end at once, with `signal` already aborted, so the route writes nothing and stops.
 * `Accept-Ranges: none` says what the stream does with a Range header: it ignores it, as it does a conditional one.
 */
import { once } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { endOnStop } from './streamsEndOnStop';

export interface SseStream {
  /** Writes one event; resolves when it may be followed by another (after 'drain' when the socket was full). */
  write(event: string, data: unknown, id?: string | number): Promise<void>;
  /** Like write, with `data` already serialised (one JSON text, no newlines: JSON.stringify output). */
  writeJson(event: string, json: string, id?: string | number): Promise<void>;
  end(): void;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
}

export function openSse(request: FastifyRequest, reply: FastifyReply, opts: { keepAliveMs: number }): SseStream {
  const ac = new AbortController();
  const res = reply.raw;
  request.raw.on('close', () => ac.abort());
  res.on('close', () => ac.abort());
  // the service stopping ends the stream (api/http/streamsEndOnStop.ts): the client resumes with Last-Event-ID
  const forget = endOnStop(request, () => {
    ac.abort();
    if (!res.writableEnded) res.end();
  });
  ac.signal.addEventListener('abort', forget, { once: true });
  // access-control-*, vary, x-request-id: set on the reply by onRequest hooks, and lost by a bare writeHead
  const hookHeaders: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) hookHeaders[name] = value;
  reply.hijack();
  res.writeHead(200, {
    ...hookHeaders,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    // the connection kept or closed as the request asked (Node's decision: a `Connection: close` or HTTP/1.0 client's
    // socket closes when the stream or a HEAD ends), and said without Node's `Keep-Alive: timeout=72` (fastify's
    // keepAliveTimeout): told it, a client kept the ended stream's connection idle for 72 s, and the server's stop
    // waited for it (hostReads: 70 s); without it, clients use their own short idle time
    connection: res.shouldKeepAlive ? 'keep-alive' : 'close',
    'x-accel-buffering': 'no',
    // a live stream has no byte ranges and no validators: Range, If-Range, If-None-Match and If-Modified-Since are
    // ignored (RFC 9110 §14.2, §13.1: a server may), and the stream is always a 200 from its start (docs/attempts.md)
    'accept-ranges': 'none',
  });
  if (request.method === 'HEAD') {
    // Node sends a HEAD answer's headers when it ends, and drops its body writes: an open stream would answer nothing
    res.end();
    ac.abort();
  } else res.write('retry: 2000\n\n');
  // a comment line is only worth sending when nothing is queued: a full socket is not idle
  const keepAlive = setInterval(() => {
    if (!ac.signal.aborted && !res.writableNeedDrain && !res.writableEnded) res.write(': keep-alive\n\n');
  }, opts.keepAliveMs);
  keepAlive.unref();
  ac.signal.addEventListener('abort', () => clearInterval(keepAlive), { once: true });
  const writeJson = async (event: string, json: string, id?: string | number) => {
    if (ac.signal.aborted || res.writableEnded) return;
    const ok = res.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${json}\n\n`);
    if (ok) return;
    try {
      await once(res, 'drain', { signal: ac.signal });
    } catch {
      // client gone: the caller sees signal.aborted and stops
    }
  };
  return {
    signal: ac.signal,
    write: (event, data, id) => writeJson(event, JSON.stringify(data), id),
    writeJson,
    end() {
      clearInterval(keepAlive);
      if (!res.writableEnded) res.end();
    },
  };
}
