/**
 * A follower of one process's log for the chaos soak: over the WebSocket (`/ws/execution-processes/:id/logs/normalized`,
 * resumed with `?after=<seq>`) or SSE (`GET /api/events/processes/:id/logs`, resumed with `Last-Event-ID`), as a
 * client that keeps the lines it got. It hangs up on its own now and then (`hangUps` times, at random moments) and
 * reconnects after any drop (the soak's kills break its connection too), from the last seq it holds, until the stream
 * says the process ended. What it got is compared with the stored lines afterwards (chaos.ts, checkFollowers).
 */
import WebSocket from 'ws';

export type Transport = 'ws' | 'sse';

export interface Followed {
  processId: string;
  attemptId: string;
  transport: Transport;
  /** each line's seq and message, in the order received */
  lines: { seq: number; message: string }[];
  /** the stream said the process ended (WebSocket close 1000, SSE `event: end`) */
  ended: boolean;
  connects: number;
  hangUps: number;
  /** stream.ready notices with reset: true (a cursor past the last line: never expected here) */
  resets: number;
  /** why it gave up, when it did */
  gaveUp?: string;
}

export interface FollowOptions {
  base: string;
  processId: string;
  attemptId: string;
  transport: Transport;
  hangUps: number;
  random: () => number;
  /** follow until this moment at the latest */
  untilMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One connection: resolves with 'end' when the stream said the process ended, 'drop' otherwise. */
type Session = (after: number, hangUpAfterMs: number | undefined, take: (entry: Record<string, unknown>) => void) => Promise<'end' | 'drop'>;

function wsSession(opts: FollowOptions): Session {
  return (after, hangUpAfterMs, take) =>
    new Promise((resolve) => {
      const url = `${opts.base.replace(/^http/, 'ws')}/ws/execution-processes/${opts.processId}/logs/normalized?after=${after}`;
      const ws = new WebSocket(url);
      let timer: NodeJS.Timeout | undefined;
      if (hangUpAfterMs !== undefined) timer = setTimeout(() => ws.terminate(), hangUpAfterMs);
      ws.on('message', (data) => {
        try {
          take(JSON.parse(String(data)) as Record<string, unknown>);
        } catch {
          /* not JSON: counted by the check as a missing line */
        }
      });
      ws.on('error', () => undefined);
      ws.on('close', (code) => {
        clearTimeout(timer);
        resolve(code === 1000 ? 'end' : 'drop');
      });
    });
}

function sseSession(opts: FollowOptions): Session {
  return async (after, hangUpAfterMs, take) => {
    const controller = new AbortController();
    const timer = hangUpAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), hangUpAfterMs);
    try {
      const r = await fetch(`${opts.base}/api/events/processes/${opts.processId}/logs`, {
        headers: after > 0 ? { 'last-event-id': String(after) } : {},
        signal: controller.signal,
      });
      if (r.status !== 200 || !r.body) return 'drop';
      const decoder = new TextDecoder();
      let buffer = '';
      let event = 'message';
      let data: string[] = [];
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
          const line = buffer.slice(0, nl).replace(/\r$/, '');
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (event === 'end') return 'end';
            if (data.length) {
              try {
                const parsed = JSON.parse(data.join('\n')) as Record<string, unknown>;
                take(event === 'stream.ready' ? { type: 'stream.ready', data: parsed } : parsed);
              } catch {
                /* counted as missing */
              }
            }
            event = 'message';
            data = [];
          } else if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
      }
      return 'drop';
    } catch {
      return 'drop';
    } finally {
      clearTimeout(timer);
    }
  };
}

export async function followLog(opts: FollowOptions): Promise<Followed> {
  const out: Followed = { processId: opts.processId, attemptId: opts.attemptId, transport: opts.transport, lines: [], ended: false, connects: 0, hangUps: 0, resets: 0 };
  const session = opts.transport === 'ws' ? wsSession(opts) : sseSession(opts);
  const take = (e: Record<string, unknown>) => {
    if (e.type === 'stream.ready') {
      if ((e.data as { reset?: boolean } | undefined)?.reset) out.resets++;
      return;
    }
    if (typeof e.seq === 'number') out.lines.push({ seq: e.seq, message: String(e.message) });
  };
  while (Date.now() < opts.untilMs) {
    const after = out.lines.length ? (out.lines[out.lines.length - 1] as { seq: number }).seq : 0;
    const hangUp = out.hangUps < opts.hangUps && opts.random() < 0.5 ? 1000 + Math.round(opts.random() * 4000) : undefined;
    out.connects++;
    const t0 = Date.now();
    const how = await session(after, hangUp, take);
    if (how === 'end') {
      out.ended = true;
      return out;
    }
    if (hangUp !== undefined && Date.now() - t0 >= hangUp) out.hangUps++;
    else await sleep(500); // dropped by the server or refused (a kill): again after a moment
  }
  out.gaveUp = 'the process had not ended when the follower stopped';
  return out;
}
