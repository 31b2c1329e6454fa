/**
 * `/ws/events`: the domain events of the events table (task.created, task.status_changed, approval.*, attempt.*,
 * process_*, draft_*: lib/events) as they commit, for the web board's live screens. `topics` (comma-separated, e.g.
 * `project:<id>` or `task:<id>`; none = every event) narrows them; `after=<cursor>` first replays the stored events
 * that cursor lacks, so a client that lost its connection resumes without a gap. Each message is one event
 * `{seq, type, topics, data, createdAt, cursor}`; `cursor` is the resume token that holds it and everything sent before
 * (lib/events/eventCursor.ts): a plain seq, or a seq and the seqs above it already sent when a lower one had not
 * committed yet (`10:12-15`). A plain seq as `after` means everything up to it, as before. Once live (first, on a
 * reset: below), a `stream.ready` message's seq and cursor are where a reconnect may resume even if no event of the
 * topics came; replayed events in seq order, then live ones as they commit; none twice, and none missed by a client
 * that resumes from the last cursor it got, also when a lower seq commits after a higher one (lib/events/eventFollow.ts).
 * A cursor past the newest stored event is a cursor of another history of the database (restored from a backup,
 * recreated) or a made-up one: it is not trusted. The stream starts at the newest stored event instead: its first
 * message, before any event, is `stream.ready` with that real seq, below the one sent, and `data: {reset: true,
 * requestedAfter}` (the client resumes from its cursor from then on and reloads the state it holds); then every event
 * after it and every one heard meanwhile, each once.
 * A client that stops reading: the replay waits for it; live, it is dropped once 8 MiB wait for it (WS_DROP_BYTES),
 * and resumes with `after`.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { EVENT_CURSOR_MAX_LENGTH, EVENT_CURSOR_PATTERN, type EventCursor, parseEventCursor } from '../../lib/events/eventCursor';
import { followEvents } from '../../lib/events/eventFollow';
import type { StoredEvent } from '../../lib/events/publish';
import { AppError, validationError } from '../../lib/errors';
import { STREAM_ROUTE } from '../http/bearerAuth';
import { UUID_ANY_CASE } from '../http/validation';
import type { TaskPluginOptions } from './deps';
import { dropFarBehind, farBehind, sendRoom } from '../http/wsTextFrames';

const Query = Type.Object(
  {
    topics: Type.Optional(Type.String({ maxLength: 2000, pattern: '^[A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*$', description: 'comma-separated topics, e.g. project:<id>; a UUID in a topic may be written in any letter case', [UUID_ANY_CASE]: true })),
    after: Type.Optional(
      Type.String({
        maxLength: EVENT_CURSOR_MAX_LENGTH,
        pattern: EVENT_CURSOR_PATTERN,
        description:
          'resume: the cursor of the last message received (a seq, or a seq and the seqs above it sent already, e.g. 10:12-15); a plain seq means every event up to it. The stored events it lacks are replayed first; past the newest stored event, the stream starts at the newest (stream.ready: reset). Numbers at most 9007199254740991',
      }),
    ),
  },
  { additionalProperties: false },
);

const EVENTS_NOT_STARTED = 'The event stream is not ready: the database (PostgreSQL) has not answered since this service started; try again';

/** The parsed `after` of a request, set by the route's preHandler (before the upgrade, so a bad one is a 400). */
const cursors = new WeakMap<IncomingMessage, { cursor: EventCursor; requested: number | string }>();

export const eventStreamRoutes: FastifyPluginAsync<TaskPluginOptions> = async (app, { deps }) => {
  const preHandler = async (request: FastifyRequest) => {
    // a service that started while PostgreSQL was away has no starting point for the stream until it answers
    if (!deps.events.started()) throw new AppError(503, 'SERVICE_UNAVAILABLE', EVENTS_NOT_STARTED);
    const { after } = request.query as { after?: string };
    if (after === undefined) return;
    const cursor = parseEventCursor(after);
    if (!cursor) throw validationError('Request query is invalid: after holds a number past 9007199254740991 or a range that ends before it starts', { after: 'not a resume cursor' });
    cursors.set(request.raw, { cursor, requested: /^[0-9]+$/.test(after) ? cursor.watermark : after });
  };
  app.get('/ws/events', { websocket: true, config: STREAM_ROUTE, preHandler, schema: { tags: ['streams'], querystring: Query } }, (socket: WebSocket, request) => {
    const q = request.query as { topics?: string };
    const topics = q.topics ? [...new Set(q.topics.split(','))].slice(0, 50) : [];
    const closed = new AbortController();
    socket.on('close', () => closed.abort());
    const send = (msg: Record<string, unknown>, seq: number) => {
      if (socket.readyState !== socket.OPEN) return;
      socket.send(JSON.stringify(msg));
      // a client that stopped reading is dropped rather than holding every later event here; it resumes with after=
      if (farBehind(socket)) {
        request.log.info({ seq, bufferedBytes: socket.bufferedAmount }, 'event socket too far behind: closed (the client resumes with after=<cursor>)');
        dropFarBehind(socket);
      }
    };
    const follow = followEvents(
      deps.db,
      deps.events,
      { topics, after: cursors.get(request.raw) },
      {
        open: () => socket.readyState === socket.OPEN,
        room: () => sendRoom(socket, closed.signal),
        event: (e: StoredEvent, cursor) => send({ seq: e.seq, type: e.type, topics: e.topics, data: e.data, createdAt: e.createdAt, cursor }, e.seq),
        ready: (seq, cursor, data) => send({ seq, type: 'stream.ready', topics, data, createdAt: new Date().toISOString(), cursor }, seq),
      },
    );
    socket.on('close', follow.stop);
    follow.replayed.catch((err) => {
      request.log.warn({ err: { message: (err as Error).message } }, 'event stream replay failed');
      socket.close(1011, 'replay failed');
    });
  });
};
