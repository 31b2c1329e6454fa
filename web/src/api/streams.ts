/**
 * Live streams of the task service, reconnecting with backoff and resuming where they stopped.
 *  - WebSocket (`/ws…`): browsers cannot send headers on an upgrade, so the key goes as `?access_token=` (accepted
 *    only by stream routes). `resumeQuery(lastSeq, token)` adds the resume parameter a route understands: the
 *    server's resume token of the last message where the route sends one (`cursor` on /ws/events:
 *    eventStreamResume), else the last seq; messages with a seq at or below the last one seen (a route that replays
 *    from the start) are dropped. A `stream.ready` with
 *    `data.reset` (the server did not know the cursor sent: another history of its database) resets the cursor and
 *    what was seen (streamCursor.ts), and `onReset` has the caller reload what the stream keeps fresh.
 *  - SSE (`/api/events/…`): read with fetch so the key goes as `Authorization: Bearer` and a reconnect sends
 *    `Last-Event-ID` with the last `id:` received (the routes resume from it).
 * While a stream is down the connection banner shows (connection.ts). A stream the server ended on purpose (log of a
 * finished process, `end` event) is not reopened. While the server refuses the key (a 401 anywhere), streams wait for
 * a new key instead of retrying (the key prompt is up; no "connection lost" banner then).
 */
import { getApiKey, isKeyRefused, onKeyChange, reportUnauthorized } from './auth';
import { markConnected, markLost, markOpen } from './connection';
import { createStreamCursor, resetSeqOf } from './streamCursor';

export interface StreamHandle {
  close(): void;
}

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 10_000;

/** 250 ms, 500 ms, 1 s … up to 10 s, with ±20% jitter so many tabs do not reconnect together. */
export function backoffDelay(failures: number): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.max(0, failures));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

function wsUrl(path: string, query: Record<string, string>): string {
  const u = new URL(path, window.location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  const key = getApiKey();
  if (key) u.searchParams.set('access_token', key);
  return u.toString();
}

export interface WebSocketStreamOptions<M> {
  path: string;
  /** Sent on every (re)open, e.g. subscriptions. */
  onOpen?: (send: (msg: unknown) => void) => void;
  onMessage: (msg: M) => void;
  /** The sequence number of a message, for resume and de-duplication. */
  seqOf?: (msg: M) => number | undefined;
  /**
   * How messages with a seq are de-duplicated: `monotonic` (default) drops any seq at or below the highest seen (a
   * log replayed from its start); `seen` drops only a seq already seen (events, where a later seq may commit first).
   */
  dedupe?: 'monotonic' | 'seen';
  /** The server's resume token a message carries (it then replaces the last seq as where the stream resumes). */
  cursorOf?: (msg: M) => string | undefined;
  /** Query parameters that make the route resume after `lastSeq` (the highest seq seen), or from `token` when set. */
  resumeQuery?: (lastSeq: number, token: string | undefined) => Record<string, string>;
  /** Called after a reconnect (not the first open): the caller may refetch what it could have missed. */
  onReconnect?: () => void;
  /**
   * Called when the server reset the stream (`stream.ready` with `data.reset`: the cursor sent belongs to another
   * history of its database): what the caller holds from this stream describes that history; reload it. The reset
   * message itself is not passed to onMessage.
   */
  onReset?: () => void;
  /**
   * Where the stream goes on after a reset: `ready` (default) resumes from the ready message's seq (the server goes on
   * from there); `start` reopens the stream from its start (a log, whose every line the caller holds and reloads).
   */
  resetFrom?: 'ready' | 'start';
  /** Called each time the connection is lost and a retry is scheduled. */
  onLost?: () => void;
  /** Whether a normal close (1000) from the server ends the stream for good (default: reconnect). */
  endOnNormalClose?: boolean;
  /**
   * The seq the caller already holds (read another way, e.g. a log's history over HTTP): the first connection
   * resumes after it, as a reconnect would. Default: from the start.
   */
  initialSeq?: number;
  /** Raw text frames (e.g. raw logs) are passed as strings instead of parsed JSON. */
  raw?: boolean;
  /** Called when the server ended the stream for good (normal close with endOnNormalClose, or 4404). */
  onEnd?: () => void;
}

export function openWebSocketStream<M>(opts: WebSocketStreamOptions<M>): StreamHandle {
  const id = Symbol(opts.path);
  let socket: WebSocket | null = null;
  let closed = false;
  let failures = 0;
  let opened = false;
  const cursor = createStreamCursor(opts.dedupe ?? 'monotonic');
  if (opts.initialSeq) cursor.reset(opts.initialSeq);
  let timer: ReturnType<typeof setTimeout> | undefined;

  const connect = () => {
    if (closed) return;
    if (isKeyRefused()) {
      markConnected(id); // not a lost connection: waiting for a key (onKeyChange reconnects)
      return;
    }
    const query = (cursor.last > 0 || cursor.token !== undefined) && opts.resumeQuery ? opts.resumeQuery(cursor.last, cursor.token) : {};
    const ws = new WebSocket(wsUrl(opts.path, query));
    socket = ws;
    ws.onopen = () => {
      const reconnected = opened;
      opened = true;
      failures = 0;
      markOpen(id);
      opts.onOpen?.((msg) => ws.send(JSON.stringify(msg)));
      if (reconnected) opts.onReconnect?.();
    };
    ws.onmessage = (ev) => {
      if (socket !== ws) return; // replaced (a reset reopened the stream)
      let msg: M;
      if (opts.raw) msg = ev.data as M;
      else {
        try {
          msg = JSON.parse(String(ev.data)) as M;
        } catch {
          return;
        }
      }
      const resetTo = opts.raw ? undefined : resetSeqOf(msg);
      const token = opts.cursorOf?.(msg);
      if (resetTo !== undefined) return reset(ws, resetTo, token);
      // every token the server sends holds the ones before it: also that of a message had already
      if (token !== undefined) cursor.note(token);
      const seq = opts.seqOf?.(msg);
      if (seq !== undefined && !cursor.accept(seq)) return;
      opts.onMessage(msg);
    };
    ws.onclose = (ev) => {
      if (socket !== ws) return;
      socket = null;
      if (closed) return;
      if ((ev.code === 1000 && opts.endOnNormalClose) || ev.code === 4404) {
        markConnected(id);
        opts.onEnd?.();
        return;
      }
      markLost(id, opts.path);
      opts.onLost?.();
      timer = setTimeout(connect, backoffDelay(failures++));
    };
  };

  // before onReset, so the caller's reload sees the new cursor; `start`: reopened at once, with no cursor
  const reset = (ws: WebSocket, seq: number, token: string | undefined) => {
    if (opts.resetFrom === 'start') {
      cursor.reset(0);
      socket = null;
      ws.close();
      opts.onReset?.();
      connect();
      return;
    }
    cursor.reset(seq);
    if (token !== undefined) cursor.note(token);
    opts.onReset?.();
  };

  const stopKeyWatch = onKeyChange(() => {
    // a new key: reopen at once with it
    if (closed) return;
    clearTimeout(timer);
    const ws = socket;
    socket = null;
    ws?.close();
    connect();
  });
  connect();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      stopKeyWatch();
      markConnected(id);
      socket?.close();
      socket = null;
    },
  };
}

/**
 * How a `/ws/events` stream resumes: from the last message's `cursor` (the server's resume token: a lower seq that
 * commits after a higher one still comes), de-duplicated by seq.
 */
export function eventStreamResume<M extends { seq: number; cursor?: string }>(): Pick<WebSocketStreamOptions<M>, 'seqOf' | 'dedupe' | 'cursorOf' | 'resumeQuery'> {
  return { seqOf: (m) => m.seq, dedupe: 'seen', cursorOf: (m) => m.cursor, resumeQuery: (seq, token) => ({ after: token ?? String(seq) }) };
}

export interface SseStreamOptions {
  path: string;
  onEvent: (event: string, data: unknown, id: string | undefined) => void;
  /** Events after which the server has nothing more to send (default `end`): the stream is not reopened. */
  endEvents?: string[];
}

/** Splits an SSE byte stream into events (the WHATWG parsing rules for event, data and id fields). */
export function createSseParser(onEvent: (event: string, data: string, id: string | undefined) => void): (chunk: string) => void {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  return (chunk) => {
    buffer += chunk;
    let nl = buffer.search(/\r\n|\r|\n/);
    while (nl >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') {
        if (data.length) onEvent(event || 'message', data.join('\n'), id);
        event = '';
        data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id') id = value;
      }
      nl = buffer.search(/\r\n|\r|\n/);
    }
  };
}

export function openSseStream(opts: SseStreamOptions): StreamHandle {
  const id = Symbol(opts.path);
  const endEvents = new Set(opts.endEvents ?? ['end']);
  let closed = false;
  let failures = 0;
  let lastEventId: string | undefined;
  let ac: AbortController | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let ended = false;

  const run = async () => {
    if (closed || ended || running) return;
    if (isKeyRefused()) {
      markConnected(id);
      return;
    }
    ac = new AbortController();
    running = true;
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      const key = getApiKey();
      if (key) headers.authorization = `Bearer ${key}`;
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      const res = await fetch(opts.path, { headers, signal: ac.signal });
      if (res.status === 404) ended = true; // gone for good
      if (res.status === 401) reportUnauthorized();
      if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
      failures = 0;
      markOpen(id);
      const parse = createSseParser((event, raw, eventId) => {
        if (eventId !== undefined) lastEventId = eventId;
        let data: unknown = raw;
        try {
          data = JSON.parse(raw);
        } catch {
          // not JSON: passed as text
        }
        if (endEvents.has(event)) ended = true;
        opts.onEvent(event, data, eventId);
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parse(value);
      }
    } catch {
      // network error or abort: decided below
    }
    running = false;
    if (closed || ended) {
      markConnected(id);
      return;
    }
    markLost(id, opts.path);
    timer = setTimeout(run, backoffDelay(failures++));
  };

  const stopKeyWatch = onKeyChange(() => {
    if (closed) return;
    clearTimeout(timer);
    if (running) ac?.abort(); // the running request ends and reconnects (with the new key)
    else void run();
  });
  void run();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      stopKeyWatch();
      markConnected(id);
      ac?.abort();
    },
  };
}
