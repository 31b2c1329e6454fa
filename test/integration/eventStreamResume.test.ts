/**
 * /ws/events resumes exactly across events whose transactions commit out of seq order: transaction A takes seq n,
 * transaction B takes n+1 and commits first. A client that got n+1 (or a stream.ready said while n was in flight) and
 * resumes from what it got still gets n, once, whether n commits while it is away, while its resumed stream replays,
 * or later. A client resumes from the last message's `cursor` (the resume token), as the board does.
 */
import type { PoolClient } from 'pg';
import WebSocket from 'ws';
import { publishEvent } from '../../lib/events/publish';
import { eventually, startTestStack, type TestStack } from '../support/harness';

const KEY = 'event-resume-key-0123456789';
let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await startTestStack({ env: { ARMADA_TASK_API_KEY: KEY } });
  base = (await stack.app('task').listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws');
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

interface Message {
  seq: number;
  type: string;
  data: Record<string, unknown>;
  cursor?: string;
}

interface Stream {
  ws: WebSocket;
  events: Message[];
  messages: Message[];
  /** What a client resumes from: the last message's resume token (a plain seq where there is none). */
  resumePoint(): string;
  close(): Promise<void>;
}

function open(topic: string, after?: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base}/ws/events?topics=${encodeURIComponent(topic)}${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}&access_token=${KEY}`);
    const messages: Message[] = [];
    const events: Message[] = [];
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as Message;
      messages.push(m);
      if (m.type !== 'stream.ready') events.push(m);
    });
    const resumePoint = () => {
      const last = messages.at(-1);
      if (!last) throw new Error('no message yet');
      return last.cursor ?? String(Math.max(...messages.map((m) => m.seq)));
    };
    const close = () =>
      new Promise<void>((r) => {
        if (ws.readyState === ws.CLOSED) return r();
        ws.once('close', () => r());
        ws.close();
      });
    ws.on('open', () => resolve({ ws, events, messages, resumePoint, close }));
    ws.on('error', reject);
  });
}

const newTopic = () => `resume:${Math.random().toString(36).slice(2)}`;
const ready = (s: Stream) => eventually(async () => s.messages.some((m) => m.type === 'stream.ready'));
const has = (s: Stream, seq: number) => s.events.some((e) => e.seq === seq);
/** Time for anything more (a duplicate) to arrive; the assertions hold whatever comes later. */
const settle = () => new Promise((r) => setTimeout(r, 500));

/** Transaction A takes seq n and stays open; B takes n+1 and commits. */
async function outOfOrder(topic: string): Promise<{ a: PoolClient; n: number; n1: number }> {
  const a = await stack.db.connect();
  await a.query('BEGIN');
  const n = (await publishEvent(a, { type: 'test.early-seq-late-commit', topics: [topic], data: {} })).seq;
  const n1 = (await publishEvent(stack.db, { type: 'test.late-seq-early-commit', topics: [topic], data: {} })).seq;
  expect(n1).toBeGreaterThan(n);
  return { a, n, n1 };
}

async function commit(a: PoolClient): Promise<void> {
  await a.query('COMMIT');
  a.release();
}

function expectEachOnce(streams: Stream[], seqs: number[]): void {
  const got = streams.flatMap((s) => s.events.map((e) => e.seq));
  expect([...got].sort((x, y) => x - y)).toEqual([...seqs].sort((x, y) => x - y));
}

test('a client that got n+1 while n was in flight, and was away when n committed, gets n once on resume', async () => {
  const topic = newTopic();
  const first = await open(topic);
  await ready(first);
  const { a, n, n1 } = await outOfOrder(topic);
  await eventually(async () => has(first, n1));
  await first.close();
  await commit(a); // while the client is away
  const resumed = await open(topic, first.resumePoint());
  const later = (await publishEvent(stack.db, { type: 'test.later', topics: [topic], data: {} })).seq;
  await eventually(async () => has(resumed, later), 10_000).catch(() => undefined);
  await settle();
  expectEachOnce([first, resumed], [n1, n, later]);
  expect(resumed.events.map((e) => e.seq)).toEqual([n, later]);
  await resumed.close();
});

test('a stream.ready said while n was in flight (n+1 committed): a resume from it gets n once', async () => {
  const topic = newTopic();
  const { a, n, n1 } = await outOfOrder(topic);
  // once a stream of the topic has n+1 (live, or before its stream.ready), the API's listener has heard it
  const probe = await open(topic);
  await eventually(async () => has(probe, n1) || probe.messages.some((m) => m.type === 'stream.ready' && m.seq >= n1));
  await probe.close();
  const quiet = await open(topic); // opened after n+1 was heard: it gets no event, only stream.ready
  await ready(quiet);
  await quiet.close();
  await commit(a);
  const resumed = await open(topic, quiet.resumePoint());
  await eventually(async () => has(resumed, n), 10_000).catch(() => undefined);
  await settle();
  expect(quiet.events).toEqual([]);
  expect(resumed.events.map((e) => e.seq)).toEqual([n]);
  await resumed.close();
});

test('n commits while the resumed stream replays: it still comes, once', async () => {
  const topic = newTopic();
  const first = await open(topic);
  await ready(first);
  const { a, n, n1 } = await outOfOrder(topic);
  await eventually(async () => has(first, n1));
  await first.close();
  // A commits right after the resumed stream read the stored events of its topic: n is heard while it replays
  const original = stack.db.query.bind(stack.db) as (...args: unknown[]) => Promise<unknown>;
  let committed = false;
  (stack.db as { query: unknown }).query = async (...args: unknown[]) => {
    const result = await original(...args);
    const sql = typeof args[0] === 'string' ? args[0] : '';
    if (!committed && sql.includes('FROM events') && JSON.stringify(args[1] ?? []).includes(topic)) {
      committed = true;
      await commit(a);
      await new Promise((r) => setTimeout(r, 300)); // the listener hears n meanwhile
    }
    return result;
  };
  let resumed: Stream;
  try {
    resumed = await open(topic, first.resumePoint());
    await eventually(async () => committed && resumed.messages.some((m) => m.type === 'stream.ready'));
  } finally {
    (stack.db as { query: unknown }).query = original;
  }
  await eventually(async () => has(resumed, n), 10_000).catch(() => undefined);
  await settle();
  expectEachOnce([first, resumed], [n1, n]);
  await resumed.close();
});

test('a follower that stays connected gets n+1 then n, each once; a resume from its last message misses nothing', async () => {
  const topic = newTopic();
  const live = await open(topic);
  await ready(live);
  const { a, n, n1 } = await outOfOrder(topic);
  await eventually(async () => has(live, n1));
  await commit(a);
  await eventually(async () => has(live, n));
  const later = (await publishEvent(stack.db, { type: 'test.later', topics: [topic], data: {} })).seq;
  await eventually(async () => has(live, later));
  await settle();
  expect(live.events.map((e) => e.seq)).toEqual([n1, n, later]);
  await live.close();
  const resumed = await open(topic, live.resumePoint());
  await ready(resumed);
  await settle();
  expect(resumed.events).toEqual([]);
  await resumed.close();
});

test('a seq that never commits (rolled back) leaves the cursor once its transaction ended: the cursor is a plain seq again', async () => {
  const topic = newTopic();
  const live = await open(topic);
  await ready(live);
  const { a, n, n1 } = await outOfOrder(topic);
  await eventually(async () => has(live, n1));
  expect(live.events.at(-1)?.cursor).toMatch(new RegExp(`^[0-9]+:([0-9,-]+,)?${n1}(-[0-9]+)?(,|$)`)); // n1 held above the hole n
  await a.query('ROLLBACK');
  a.release();
  const plain = await eventually(async () => {
    const seq = (await publishEvent(stack.db, { type: 'test.later', topics: [topic], data: {} })).seq;
    await eventually(async () => has(live, seq));
    const cursor = live.events.at(-1)?.cursor as string;
    return /^[0-9]+$/.test(cursor) ? cursor : undefined;
  });
  expect(Number(plain)).toBeGreaterThan(n1);
  expect(live.events.some((e) => e.seq === n)).toBe(false);
  await live.close();
});

test('after=: a cursor with a number past 2^53 - 1, a range that ends before it starts or a bad syntax is a 400 in the envelope', async () => {
  for (const after of ['9007199254740992', '5:9-7', '5:', '5:7;9', '-1']) {
    const res = await stack.app('task').inject({ method: 'GET', url: `/ws/events?after=${encodeURIComponent(after)}`, headers: { authorization: `Bearer ${KEY}` } });
    expect([after, res.statusCode, res.json().success, res.json().error.code]).toEqual([after, 400, false, 'VALIDATION_ERROR']);
  }
  // a cursor with ranges is taken
  const s = await open(newTopic(), '5:7-9,12');
  await ready(s);
  await s.close();
});
