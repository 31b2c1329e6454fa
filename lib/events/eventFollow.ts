/**
 * One follower of the domain events (the `/ws/events` stream; any transport): the stored events its resume cursor
 * lacks, then live ones as the listener delivers them, each once, every message with the resume token that holds
 * everything sent up to it (lib/events/eventCursor.ts).
 *
 * The follower's cursor is the client's cursor, plus what the replay sent, plus what the listener had delivered when
 * the follower subscribed (once the replay has read past it: those events were committed before it read), plus
 * everything the listener delivers from then on (sent live, or of other topics, or proven never to commit). So a seq
 * that commits after a higher one, while the client is away, while the replay runs or later, is still sent, and no
 * token ever holds a seq the client was not sent.
 */
import type { Queryable } from '../db/pool';
import { EventCursor } from './eventCursor';
import type { EventListener } from './listener';
import { latestEventSeq, readEventsOutside, type StoredEvent } from './publish';

const BACKLOG_PAGE = 500;

export interface EventSink {
  /** False once the client is gone. */
  open(): boolean;
  /** Resolves when the client can take more (the replay waits for a slow reader). */
  room(): Promise<void>;
  event(e: StoredEvent, cursor: string): void;
  /** `stream.ready`: where a reconnect may resume even if no event of the topics came. */
  ready(seq: number, cursor: string, data: Record<string, unknown>): void;
}

export interface FollowRequest {
  topics: string[];
  /** The client's cursor (undefined: from now on) and the token it sent, for a reset's `requestedAfter`. */
  after?: { cursor: EventCursor; requested: number | string };
}

/** Starts following; returns the unsubscribe. A failed replay rejects `replayed` (the caller closes the stream). */
export function followEvents(db: Queryable, events: EventListener, req: FollowRequest, sink: EventSink): { stop: () => void; replayed: Promise<void> } {
  const { topics, after } = req;
  // events delivered while the replay runs wait here; null once live
  let pending: StoredEvent[] | null = after ? [] : null;
  // what this client has besides what the listener delivers from its subscription on: its cursor, what the replay sent
  let own = after?.cursor.clone() ?? EventCursor.upTo(0);
  const liveToken = () => events.token(own);
  // subscribe before anything async, so nothing committed after the handshake is missed
  const stop = events.subscribe(topics, (e) => {
    if (pending) pending.push(e);
    else if (!own.has(e.seq)) sink.event(e, liveToken());
  });
  const subscribed = events.cursor();
  const subscribedAt = events.lastSeq();
  if (!after) {
    sink.ready(subscribedAt, liveToken(), {});
    return { stop, replayed: Promise.resolve() };
  }

  const replay = async () => {
    // read after subscribing: an event committed since is heard (it waits in `pending`) or replayed, or both
    const newest = await latestEventSeq(db);
    // a cursor past the newest stored event knows none of this history (a restored backup, a made-up token): the
    // stream starts from what the listener had delivered when it subscribed, and says so first
    const ahead = after.cursor.max() > newest;
    const have = ahead ? subscribed.clone() : after.cursor.clone();
    if (ahead) sink.ready(newest, have.toString(), { reset: true, requestedAfter: after.requested });
    let from = have.watermark;
    for (;;) {
      await sink.room();
      const page = await readEventsOutside(db, have, { after: from, topics, limit: BACKLOG_PAGE });
      for (const e of page) {
        // what the listener had delivered up to here was committed before this read: sent now, or not of the topics
        have.add(e.seq).addAll(subscribed, e.seq);
        sink.event(e, have.toString());
        from = e.seq;
      }
      if (page.length < BACKLOG_PAGE || !sink.open()) break;
    }
    have.addAll(subscribed);
    const heard = pending ?? [];
    pending = null;
    for (const e of heard) {
      if (have.has(e.seq)) continue; // replayed, or the client had it
      have.add(e.seq);
      sink.event(e, have.toString());
    }
    own = have; // from here on the listener's cursor holds every event heard since the subscription
    if (!ahead) sink.ready(Math.max(from, after.cursor.max(), subscribedAt), liveToken(), {});
  };
  return { stop, replayed: replay() };
}
