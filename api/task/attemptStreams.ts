/**
 * Live streams of the task service. WebSocket: /ws (task status), /ws/execution-processes (process lifecycle),
 * /ws/execution-processes/:id/logs/raw|normalized. SSE: /api/events/processes/:id/logs and
 * /api/events/task-attempts/:id/diff, with `id:` lines and Last-Event-ID resume, keep-alive comments and
 * backpressure (api/http/sse.ts).
 * Lifecycle events come from deps.events (LISTEN/NOTIFY fan-out to every replica); logs are read by seq.
 */
import crypto from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import type { CpuPool } from '../../lib/attempts/cpuPool';
import { logLine, streamLogRows } from '../../lib/attempts/logStream';
import { getAttempt, TERMINAL_ATTEMPT_STATUSES } from '../../lib/db/attempts';
import { getProcess } from '../../lib/db/processes';
import { notFound } from '../../lib/errors';
import { ErrorResponses, IdParams } from '../http/schemas';
import { openSse } from '../http/sse';
import { attemptDiff } from './attempts';
import { isAppError } from '../../lib/errors';
import type { TaskPluginOptions } from './deps';
import { STREAM_ROUTE } from '../http/bearerAuth';

const send = (socket: WebSocket, msg: unknown) => {
  if (socket.readyState === socket.OPEN) socket.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
};

/** `after=<seq>`: a log socket that reconnects resumes after the last entry it got instead of from the start. */
const LogSocketQuery = Type.Object(
  { after: Type.Optional(Type.Integer({ minimum: 0, description: 'send only the entries after this seq (resume after a reconnect)' })) },
  { additionalProperties: false },
);

const SseResponse = { 200: Type.String({ description: 'text/event-stream' }), ...ErrorResponses };

export const attemptStreamRoutes: FastifyPluginAsync<TaskPluginOptions & { cpu: CpuPool }> = async (fastify, { deps, cpu }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/ws', { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], querystring: Type.Object({}) } }, (socket) => {
    const subs = new Map<string, () => void>();
    socket.on('message', (raw) => {
      let msg: { type?: string; channel?: string; taskId?: string };
      try {
        msg = JSON.parse(String(raw));
      } catch {
        return send(socket, { type: 'error', message: 'messages must be JSON' });
      }
      if (msg.type === 'ping') return send(socket, { type: 'pong', timestamp: new Date().toISOString() });
      if (msg.channel !== 'tasks' || (msg.type !== 'subscribe' && msg.type !== 'unsubscribe')) {
        return send(socket, { type: 'error', message: 'expected {type: subscribe|unsubscribe, channel: tasks, taskId?}' });
      }
      const key = msg.taskId ?? '*';
      if (msg.type === 'unsubscribe') {
        subs.get(key)?.();
        subs.delete(key);
        return send(socket, { type: 'unsubscribed', channel: 'tasks', taskId: msg.taskId ?? null });
      }
      if (!subs.has(key)) {
        subs.set(
          key,
          deps.events.subscribe(msg.taskId ? [`task:${msg.taskId}`] : [], (e) => {
            if (e.type !== 'task.status_changed') return;
            const d = e.data as { taskId: string; status: string; previousStatus?: string; timestamp?: string };
            send(socket, { type: 'task.status_changed', taskId: d.taskId, status: d.status, previousStatus: d.previousStatus, timestamp: d.timestamp ?? e.createdAt });
          }),
        );
      }
      send(socket, { type: 'subscribed', channel: 'tasks', taskId: msg.taskId ?? null });
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

  const logSocket = (kind: 'raw' | 'normalized') => async (socket: WebSocket, request: FastifyRequest) => {
    const { id } = request.params as { id: string };
    const { after } = request.query as { after?: number };
    const ac = new AbortController();
    socket.on('close', () => ac.abort());
    if (!(await getProcess(deps.db, id))) {
      send(socket, { type: 'error', message: `Process ${id} not found` });
      return socket.close(4404, 'not found');
    }
    try {
      for await (const rows of streamLogRows(deps.db, {
        processes: async () => [id],
        finished: async () => (await getProcess(deps.db, id))?.status !== 'running',
        follow: true,
        after: after ? { [id]: after } : undefined,
        signal: ac.signal,
      })) {
        for (const r of rows) send(socket, kind === 'raw' ? `${r.raw}\n` : { level: r.level, message: r.message, timestamp: r.ts.toISOString(), source: r.source, metadata: r.metadata, seq: r.seq });
      }
    } catch (err) {
      request.log.warn({ err: { message: (err as Error).message } }, 'log socket failed');
    }
    if (socket.readyState === socket.OPEN) socket.close(1000, 'process finished');
  };
  app.get('/ws/execution-processes/:id/logs/raw', { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, querystring: LogSocketQuery } }, logSocket('raw'));
  app.get('/ws/execution-processes/:id/logs/normalized', { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, querystring: LogSocketQuery } }, logSocket('normalized'));

  app.get('/api/events/processes/:id/logs', { config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, response: SseResponse } }, async (request, reply) => {
    const { id } = request.params;
    if (!(await getProcess(deps.db, id))) throw notFound(`Process ${id} not found`);
    const last = Number(request.headers['last-event-id']);
    const out = openSse(request, reply, { keepAliveMs: deps.config.sseKeepAliveMs });
    try {
      for await (const rows of streamLogRows(deps.db, {
        processes: async () => [id],
        finished: async () => (await getProcess(deps.db, id))?.status !== 'running',
        follow: true,
        after: Number.isInteger(last) && last > 0 ? { [id]: last } : undefined,
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

  app.get('/api/events/task-attempts/:id/diff', { config: STREAM_ROUTE, schema: { tags: ['streams'], params: IdParams, response: SseResponse } }, async (request, reply) => {
    const { id } = request.params;
    if (!(await getAttempt(deps.db, id))) throw notFound(`Attempt ${id} not found`);
    // a diff is state, not a log: each event is the whole current diff, its id a hash of it; a client resuming
    // with the id of the diff it has gets nothing until the diff changes
    let lastHash = typeof request.headers['last-event-id'] === 'string' ? request.headers['last-event-id'] : '';
    const out = openSse(request, reply, { keepAliveMs: deps.config.sseKeepAliveMs });
    try {
      while (!out.signal.aborted) {
        const a = await getAttempt(deps.db, id);
        if (!a) break;
        let d: Awaited<ReturnType<typeof attemptDiff>>;
        try {
          d = await attemptDiff(deps, cpu, a, undefined, 'json');
        } catch (err) {
          if (!isAppError(err) || err.code !== 'HOST_UNAVAILABLE') throw err;
          // the worktree's host has no worker right now: say so once, keep trying
          if (lastHash !== 'unavailable') await out.write('unavailable', { attemptId: id, message: err.message }, lastHash || undefined);
          lastHash = 'unavailable';
          await new Promise((r) => setTimeout(r, 1000));
          continue;
        }
        const hash = crypto.createHash('sha1').update(JSON.stringify(d.files)).digest('hex').slice(0, 16);
        if (hash !== lastHash) {
          await out.write('diff', { attemptId: id, status: a.status, files: d.files, summary: d.summary }, hash);
          lastHash = hash;
        }
        if (TERMINAL_ATTEMPT_STATUSES.includes(a.status)) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      await out.write('end', { attemptId: id });
    } finally {
      out.end();
    }
  });
};
