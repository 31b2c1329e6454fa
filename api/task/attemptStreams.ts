/**
 * Live streams of the task service. WebSocket: /ws (task status), /ws/execution-processes (process lifecycle),
 * /ws/execution-processes/:id/logs/raw|normalized. SSE: /api/events/processes/:id/logs and
 * /api/events/task-attempts/:id/diff, with `id:` lines and Last-Event-ID resume, keep-alive comments and
 * backpressure (api/http/sse.ts). A log cursor past the process's last line is reset to it (lib/attempts/logCursor.ts)
 * and the stream says so before any line: `stream.ready` with `reset` first (SSE, /normalized, /raw with `notices`),
 * and on both log sockets `X-Log-Reset` in the handshake's answer, as on the NDJSON route.
 * Lifecycle events come from deps.events (LISTEN/NOTIFY fan-out to every replica); logs from deps.logs (the log feed:
 * NOTIFY-driven, read by seq); diffs from one shared reader per attempt (attemptDiffFeed.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import type { CpuPool } from '../../lib/attempts/cpuPool';
import { checkLogCursor, type LogCursor } from '../../lib/attempts/logCursor';
import { logLine, streamLogRows } from '../../lib/attempts/logStream';
import { getAttempt } from '../../lib/db/attempts';
import { getProcess, type LogRow } from '../../lib/db/processes';
import { notFound } from '../../lib/errors';
import { ErrorResponses, IdParams, SeqAfter } from '../http/schemas';
import { openSse } from '../http/sse';
import { dropFarBehind, farBehind, sendRoom, textFrame, writeTextFrames } from '../http/wsTextFrames';
import { createDiffFeeds, type DiffFeedEvent } from './attemptDiffFeed';
import type { TaskPluginOptions } from './deps';
import { MAX_TASK_SUBSCRIPTIONS, parseTaskChannelMessage } from './taskChannelMessages';
import { STREAM_ROUTE } from '../http/bearerAuth';

const send = (socket: WebSocket, msg: unknown) => {
  if (socket.readyState !== socket.OPEN) return;
  socket.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  if (farBehind(socket)) dropFarBehind(socket); // it stopped reading: dropped (1008), not holding every later message here
};

/**
 * A log row as a WebSocket frame, built once: rows from the log feed's buffer are the same objects for every
 * follower of a process, so each line is serialised and framed once per API process, not once per follower.
 */
const framed = { raw: new WeakMap<LogRow, Buffer>(), normalized: new WeakMap<LogRow, Buffer>() };
function frameOf(kind: 'raw' | 'normalized', r: LogRow): Buffer {
  let b = framed[kind].get(r);
  if (!b) {
    b = textFrame(
      Buffer.from(
        kind === 'raw' ? `${r.raw}\n` : JSON.stringify({ level: r.level, message: r.message, timestamp: r.ts.toISOString(), source: r.source, metadata: r.metadata, seq: r.seq }),
      ),
    );
    framed[kind].set(r, b);
  }
  return b;
}

/** Sends a batch of rows, one text message per row as before, all of them in one write (api/http/wsTextFrames.ts). */
function sendRows(socket: WebSocket, kind: 'raw' | 'normalized', rows: LogRow[]): void {
  if (rows.length) writeTextFrames(socket, rows.map((r) => frameOf(kind, r)));
}

/** Resume a log socket after the seq of the last line received (the normalized messages carry `seq`). */
const LogSocketAfter = SeqAfter(
  'only lines with a seq greater than this; past the last stored line, the stream starts at that line and says so: X-Log-Reset: <its seq> in the handshake, and (normalized; raw with notices=true) a first message {type: stream.ready, seq, data: {reset: true, requestedAfter}}',
  'integer',
);
const LogSocketQuery = Type.Object({ after: Type.Optional(LogSocketAfter) });
const RawLogSocketQuery = Type.Object({
  after: Type.Optional(LogSocketAfter),
  notices: Type.Optional(
    Type.Boolean({
      description: "also send the server's notices (today the reset's stream.ready): JSON messages that, unlike every output line, do not end with a newline",
    }),
  ),
});

const SseResponse = { 200: Type.String({ description: 'text/event-stream' }), ...ErrorResponses };

/**
 * `Last-Event-ID` of the log stream: the seq of the last line received, read by the rule of every numeric parameter
 * (a plain decimal numeral, bounded like `after`; api/http/validation.ts), so `0x2`, `1e0`, `2.5` or a seq beyond
 * the column are a 400 naming the header, not a resume after some other line or from the first. An EventSource only
 * ever sends back an id this route wrote, so a malformed one comes from another client, which reads the 400.
 */
const LogStreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    SeqAfter(
      "resume after this seq (the `id:` of the last event received); past the last stored line, the stream starts at that line and says so first (`event: stream.ready`, data `{reset: true, requestedAfter}`); anything but a plain decimal numeral from 0 to 2147483647 is a 400",
      'integer',
    ),
  ),
});

/** `Last-Event-ID` of the diff stream: the id of the diff event received (a hash of it: 16 lower-case hex digits). */
const DiffStreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ pattern: '^[0-9a-f]{16}$', description: 'the `id:` of the last diff event received (16 hex digits): nothing is sent until the diff differs from it; any other value is a 400' }),
  ),
});

export const attemptStreamRoutes: FastifyPluginAsync<TaskPluginOptions & { cpu: CpuPool }> = async (fastify, { deps, cpu }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const diffFeeds = createDiffFeeds(deps, cpu);
  fastify.addHook('onClose', async () => diffFeeds.close());

  app.get('/ws', { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], querystring: Type.Object({}) } }, (socket) => {
    const subs = new Map<string, () => void>();
    socket.on('message', (raw) => {
      const parsed = parseTaskChannelMessage(String(raw));
      if ('error' in parsed) return send(socket, { type: 'error', message: parsed.error });
      const msg = parsed.message;
      if (msg.type === 'ping') return send(socket, { type: 'pong', timestamp: new Date().toISOString() });
      // one key space for both kinds, so a task id that happens to be `*` is not taken for "every task"
      const key = msg.taskId === null ? '*' : `task:${msg.taskId}`;
      if (msg.type === 'unsubscribe') {
        subs.get(key)?.();
        subs.delete(key);
        return send(socket, { type: 'unsubscribed', channel: 'tasks', taskId: msg.taskId });
      }
      if (!subs.has(key)) {
        if (subs.size >= MAX_TASK_SUBSCRIPTIONS) {
          return send(socket, { type: 'error', message: `at most ${MAX_TASK_SUBSCRIPTIONS} subscriptions per connection; unsubscribe from one, or subscribe without taskId for every task` });
        }
        subs.set(
          key,
          deps.events.subscribe(msg.taskId ? [`task:${msg.taskId}`] : [], (e) => {
            if (e.type !== 'task.status_changed') return;
            const d = e.data as { taskId: string; status: string; previousStatus?: string; timestamp?: string };
            send(socket, { type: 'task.status_changed', taskId: d.taskId, status: d.status, previousStatus: d.previousStatus, timestamp: d.timestamp ?? e.createdAt });
          }),
        );
      }
      send(socket, { type: 'subscribed', channel: 'tasks', taskId: msg.taskId });
    });
    socket.on('close', () => {
      for (const u of subs.values()) u();
    });
  });

  app.get('/ws/execution-processes', { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], querystring: Type.Object({}) } }, (socket) => {
    const unsubscribe = deps.events.subscribe(['processes'], (e) => {
      if (!e.type.startsWith('process_')) return;
      send(socket, { ...e.data, type: e.type, processId: (e.data as { processId: string }).processId, timestamp: e.createdAt });
    });
    socket.on('close', unsubscribe);
  });

  // A log socket's process and cursor are read before the upgrade (null: no such process), so the handshake's answer
  // can say a reset: X-Log-Reset, as the NDJSON route's headers do. It reaches every client that reads the answer's
  // headers (not a browser) without one message more on the socket.
  const opening = new WeakMap<IncomingMessage, LogCursor | null>();
  fastify.websocketServer.on('headers', (headers, req) => {
    const reset = opening.get(req)?.reset;
    if (reset) headers.push(`X-Log-Reset: ${reset.seq}`);
  });
  const checkBeforeUpgrade = async (request: FastifyRequest) => {
    if (!request.ws) return;
    const { id } = request.params as { id: string };
    const { after } = request.query as { after?: number };
    opening.set(request.raw, (await getProcess(deps.db, id)) ? await checkLogCursor(deps.db, id, after) : null);
  };

  const logSocket = (kind: 'raw' | 'normalized') => async (socket: WebSocket, request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const { notices } = request.query as { notices?: boolean };
    const ac = new AbortController();
    socket.on('close', () => ac.abort());
    const cursor = opening.get(request.raw);
    if (!cursor) {
      send(socket, { type: 'error', message: `Process ${id} not found` });
      return socket.close(4404, 'not found');
    }
    try {
      // a raw message is an output line with its newline; a notice is JSON without one, so a client that asked for
      // notices tells them apart, and one that only prints lines gets none. Framed like the lines, so it leaves
      // before them (ws.send may queue behind them)
      if (cursor.reset && (kind === 'normalized' || notices === true)) {
        const ready = { type: 'stream.ready', seq: cursor.reset.seq, data: { reset: true, requestedAfter: cursor.reset.requestedAfter } };
        writeTextFrames(socket, [textFrame(Buffer.from(JSON.stringify(ready)))]);
      }
      for await (const rows of streamLogRows(deps.db, {
        processes: async () => [id],
        finished: async () => (await getProcess(deps.db, id))?.status !== 'running',
        follow: true,
        feed: deps.logs,
        topics: [`process:${id}`],
        after: cursor.after !== undefined ? { [id]: cursor.after } : undefined,
        signal: ac.signal,
      })) {
        // a follower that stops reading stalls its own stream (it reads the database by seq when it is behind)
        await sendRoom(socket, ac.signal);
        sendRows(socket, kind, rows);
      }
    } catch (err) {
      request.log.warn({ err: { message: (err as Error).message } }, 'log socket failed');
      // not the process's end (1000 says that, and a client stops there): 1011, and the client resumes with ?after=
      if (socket.readyState === socket.OPEN) socket.close(1011, 'the log stream failed; reconnect with after=<the last seq>');
      return;
    }
    if (socket.readyState === socket.OPEN) socket.close(1000, 'process finished');
  };
  app.get(
    '/ws/execution-processes/:id/logs/raw',
    { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, querystring: RawLogSocketQuery }, preHandler: checkBeforeUpgrade },
    logSocket('raw'),
  );
  app.get(
    '/ws/execution-processes/:id/logs/normalized',
    { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, querystring: LogSocketQuery }, preHandler: checkBeforeUpgrade },
    logSocket('normalized'),
  );

  app.get('/api/events/processes/:id/logs', { config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, headers: LogStreamHeaders, response: SseResponse } }, async (request, reply) => {
    const { id } = request.params;
    if (!(await getProcess(deps.db, id))) throw notFound(`Process ${id} not found`);
    // validated and read as a number (LogStreamHeaders); past the last stored line it is a reset
    const cursor = await checkLogCursor(deps.db, id, request.headers['last-event-id']);
    const out = openSse(request, reply, { keepAliveMs: deps.config.sseKeepAliveMs });
    try {
      // its id is the real last line's, so an EventSource that ignores the event still resumes from it
      if (cursor.reset) await out.write('stream.ready', { processId: id, seq: cursor.reset.seq, reset: true, requestedAfter: cursor.reset.requestedAfter }, cursor.reset.seq);
      for await (const rows of streamLogRows(deps.db, {
        processes: async () => [id],
        finished: async () => (await getProcess(deps.db, id))?.status !== 'running',
        follow: true,
        feed: deps.logs,
        topics: [`process:${id}`],
        after: cursor.after !== undefined ? { [id]: cursor.after } : undefined,
        signal: out.signal,
      })) {
        for (const r of rows) {
          if (out.signal.aborted) break;
          await out.write('log', logLine(r), r.seq);
        }
      }
      const p = await getProcess(deps.db, id);
      await out.write('end', { processId: id, status: p?.status ?? 'deleted' });
    } finally {
      out.end();
    }
  });

  app.get('/api/events/task-attempts/:id/diff', { config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, headers: DiffStreamHeaders, response: SseResponse } }, async (request, reply) => {
    const { id } = request.params;
    if (!(await getAttempt(deps.db, id))) throw notFound(`Attempt ${id} not found`);
    // a diff is state, not a log: each event is the whole current diff, its id a hash of it; a client resuming
    // with the id of the diff it has gets nothing until the diff changes
    let lastHash = request.headers['last-event-id'] ?? '';
    const out = openSse(request, reply, { keepAliveMs: deps.config.sseKeepAliveMs });
    // only the latest state matters: a viewer that is slow to write skips to it
    let latest: DiffFeedEvent | undefined;
    let ended = false;
    let wake: (() => void) | undefined;
    const unwatch = diffFeeds.watch(id, (e) => {
      if (e.type === 'end') ended = true;
      else latest = e;
      wake?.();
    });
    const onAbort = () => wake?.();
    out.signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!out.signal.aborted) {
        if (!latest && !ended) await new Promise<void>((r) => (wake = r));
        wake = undefined;
        const e = latest;
        latest = undefined;
        if (e?.type === 'unavailable' && lastHash !== 'unavailable') {
          await out.write('unavailable', { attemptId: id, message: e.message }, lastHash || undefined);
          lastHash = 'unavailable';
        } else if (e?.type === 'error') {
          await out.write('error', { attemptId: id, code: e.code, message: e.message });
        } else if (e?.type === 'diff' && e.body.hash !== lastHash) {
          const json = `{"attemptId":${JSON.stringify(id)},"status":${JSON.stringify(e.status)},"files":${e.body.filesJson},"summary":${JSON.stringify(e.body.summary)}}`;
          await out.writeJson('diff', json, e.body.hash);
          lastHash = e.body.hash;
        }
        if (ended && !latest) break;
      }
      // what ended it: the attempt's final status, or `deleted` when its row is gone (it was deleted while followed)
      // (left out when the database cannot say)
      if (!out.signal.aborted) {
        const a = await getAttempt(deps.db, id).then((row) => row ?? null, () => undefined);
        await out.write('end', a === undefined ? { attemptId: id } : { attemptId: id, status: a?.status ?? 'deleted' });
      }
    } finally {
      out.signal.removeEventListener('abort', onAbort);
      unwatch();
      out.end();
    }
  });
};
