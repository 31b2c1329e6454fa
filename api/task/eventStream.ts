/**
 * `/ws/events`: the domain events of the events table (task.created, task.status_changed, approval.*, attempt.*,
 * process_*, draft_*: lib/events) as they commit, for the web board's live screens. `topics` (comma-separated, e.g.
 * `project:<id>` or `task:<id>`; none = every event) narrows them; `after=<seq>` first replays the stored events
 * after that seq, so a client that lost its connection resumes without a gap. Each message is one event
 * `{seq, type, topics, data, createdAt}`; once live (first, on a reset: below), a `stream.ready` message's seq is where a reconnect may resume
 * (`after`) even if no event of the topics came; replayed events in seq order, then live ones as they commit; none twice.
 * An `after` past the newest stored event is a cursor of another history of the database (restored from a backup,
 * recreated) or a made-up one: it is not trusted. The stream starts at the newest stored event instead: its first
 * message, before any event, is `stream.ready` with that real seq, below the `after` sent, and `data: {reset: true,
 * requestedAfter}` (the client resumes from it from then on and reloads the state it holds); then every event after
 * it and every one heard meanwhile, each once.
 * A client that stops reading: the replay waits for it; live, it is dropped once 8 MiB wait for it (WS_DROP_BYTES),
 * and resumes with `after`.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { latestEventSeq, readEventsAfter, type StoredEvent } from '../../lib/events/publish';
import { STREAM_ROUTE } from '../http/bearerAuth';
import { SeqAfter } from '../http/schemas';
import type { TaskPluginOptions } from './deps';
import { farBehind, sendRoom } from '../http/wsTextFrames';

const Query = Type.Object(
  {
    topics: Type.Optional(Type.String({ maxLength: 2000, pattern: '^[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$', description: 'comma-separated topics, e.g. project:<id>' })),
    after: Type.Optional(SeqAfter('replay the stored events after this seq first; past the newest stored event, the stream starts at the newest (stream.ready: reset)', 'bigint')),
  },
  { additionalProperties: false },
);

const BACKLOG_PAGE = 500;

export const eventStreamRoutes: FastifyPluginAsync<TaskPluginOptions> = async (app, { deps }) => {
  app.get('/ws/events', { websocket: true, config: STREAM_ROUTE, schema: { tags: ['streams'], querystring: Query } }, (socket: WebSocket, request) => {
    const q = request.query as { topics?: string; after?: number };
    const topics = q.topics ? [...new Set(q.topics.split(','))].slice(0, 50) : [];
    // events committed while the backlog is read wait here; null once the backlog is out (then events go as heard:
    // the listener delivers each once, and a later seq may commit before an earlier one, so seq is no filter then)
    let pending: StoredEvent[] | null = q.after !== undefined ? [] : null;
    const closed = new AbortController();
    socket.on('close', () => closed.abort());
    const send = (e: StoredEvent) => {
      if (socket.readyState !== socket.OPEN) return;
      socket.send(JSON.stringify({ seq: e.seq, type: e.type, topics: e.topics, data: e.data, createdAt: e.createdAt }));
      // a client that stopped reading is dropped rather than holding every later event here; it resumes with after=
      if (farBehind(socket)) {
        request.log.info({ seq: e.seq, bufferedBytes: socket.bufferedAmount }, 'event socket too far behind: closed (the client resumes with after=<seq>)');
        socket.terminate();
      }
    };
    // the seqs sent by the replay: a replayed event's notification may still arrive after the replay is out (NOTIFY
    // is heard asynchronously, so an event committed before the subscription can be heard after it); never twice
    const replayed = new Set<number>();
    // subscribe before anything async, so nothing committed after the handshake is missed
    const unsubscribe = deps.events.subscribe(topics, (e) => {
      if (pending) pending.push(e);
      else if (!replayed.has(e.seq)) send(e);
    });
    socket.on('close', unsubscribe);
    // where this client may resume from even when no event of its topics comes: everything up to here was delivered
    // before it subscribed (or is replayed below)
    const subscribedAt = deps.events.lastSeq();
    const ready = (seq: number, data: Record<string, unknown> = {}) => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ seq, type: 'stream.ready', topics, data, createdAt: new Date().toISOString() }));
    };
    if (!pending) return ready(subscribedAt);
    const replay = async () => {
      const requested = q.after ?? 0;
      // read after subscribing: an event committed since is heard (it waits in `pending`) or replayed, or both
      const newest = await latestEventSeq(deps.db);
      const ahead = requested > newest;
      // a reset is said before anything else: the client resets its cursor and reloads, and only then gets the events
      // after the reset point (committed since `newest` was read, they used to come before it and were reset away)
      if (ahead) ready(newest, { reset: true, requestedAfter: requested });
      let after = ahead ? newest : requested;
      for (;;) {
        await sendRoom(socket, closed.signal); // the replay waits for a slow reader instead of being dropped
        const page = await readEventsAfter(deps.db, after, { topics, limit: BACKLOG_PAGE });
        for (const e of page) {
          replayed.add(e.seq);
          send(e);
          after = e.seq;
        }
        if (page.length < BACKLOG_PAGE || socket.readyState !== socket.OPEN) break;
      }
      const live = pending ?? [];
      pending = null;
      // a cursor ahead knows none of this history: every event heard is new to it, whatever its seq
      for (const e of live) if (!replayed.has(e.seq) && (ahead || e.seq > requested)) send(e);
      if (!ahead) ready(Math.max(after, subscribedAt));
      // a late notification comes within moments; after a minute the set only holds memory
      setTimeout(() => replayed.clear(), 60_000).unref();
    };
    replay().catch((err) => {
      request.log.warn({ err: { message: (err as Error).message } }, 'event stream replay failed');
      socket.close(1011, 'replay failed');
    });
  });
};
