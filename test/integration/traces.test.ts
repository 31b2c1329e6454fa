import { applyStatusReceipt } from '../../lib/db/traces';
import { startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let seq = 0;

beforeAll(async () => {
  stack = await startTestStack({ services: ['traces'] });
});
afterAll(async () => {
  await stack.close();
});

const inject = (method: 'GET' | 'POST', url: string, payload?: unknown, key: string | null = stack.keys.traces) =>
  stack.app('traces').inject({ method, url, payload: payload as object, headers: key === null ? {} : { 'x-api-key': key } });

const ingest = async (fields: Record<string, unknown> = {}) => {
  const res = await inject('POST', '/api/v1/traces', { messageId: `m-${++seq}`, instance: 'inst-a', to: '+15550102000', message: 'hello', ...fields });
  expect(res.statusCode).toBe(201);
  return res.json();
};

const receipt = (id: string, status: string, timestamp?: string) =>
  inject('POST', `/api/v1/traces/${id}/status`, timestamp ? { status, timestamp } : { status });

describe('auth', () => {
  test('401 {detail} without a key or with a wrong one; health stays open', async () => {
    for (const key of [null, 'wrong-key']) {
      for (const url of ['/api/v1/traces', '/api/v1/traces/analytics']) {
        const res = await inject('GET', url, undefined, key);
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({ detail: 'Invalid API key' });
      }
    }
    expect((await inject('POST', '/api/v1/traces', { messageId: 'x', instance: 'i', to: '+15550102000', message: 'm' }, null)).statusCode).toBe(401);
    expect((await inject('GET', '/health', undefined, null)).statusCode).toBe(200);
  });
});

describe('ingestion', () => {
  test('201 with defaults and the normalised phone; the single view carries the payload', async () => {
    const res = await inject('POST', '/api/v1/traces', {
      messageId: 'wamid.1',
      instance: 'sales',
      to: '+1 (555) 010-2000',
      message: 'Your order shipped',
      payload: { headers: { 'content-type': 'application/json' }, body: { text: 'Your order shipped', n: 1 } },
    });
    expect(res.statusCode).toBe(201);
    const t = res.json();
    expect(t).toMatchObject({ messageId: 'wamid.1', instance: 'sales', to: '+15550102000', message: 'Your order shipped', status: 'sent', deliveredAt: null, readAt: null });
    expect(Math.abs(new Date(t.sentAt).getTime() - Date.now())).toBeLessThan(60_000);

    const got = await inject('GET', `/api/v1/traces/${t.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual({ ...t, payload: { headers: { 'content-type': 'application/json' }, body: { text: 'Your order shipped', n: 1 } } });
    const { rows } = await stack.db.query('SELECT to_phone FROM traces WHERE id = $1', [t.id]);
    expect(rows[0].to_phone).toBe('+15550102000');
  });

  test('a repeat of (instance, messageId) answers 200 with the stored trace; another instance is a new trace', async () => {
    const first = await ingest({ messageId: 'dup-1', sentAt: '2026-01-02T03:04:05.000Z' });
    const again = await inject('POST', '/api/v1/traces', { messageId: 'dup-1', instance: 'inst-a', to: '+15550102000', message: 'changed text', status: 'read' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first);
    const other = await inject('POST', '/api/v1/traces', { messageId: 'dup-1', instance: 'inst-b', to: '+15550102000', message: 'hello' });
    expect(other.statusCode).toBe(201);
    expect(other.json().id).not.toBe(first.id);
    const { rows } = await stack.db.query("SELECT count(*)::int AS n FROM traces WHERE message_id = 'dup-1'");
    expect(rows[0].n).toBe(2);
  });

  test('concurrent repeats of one message make one row: one 201, the rest 200 with the same id', async () => {
    const body = { messageId: 'race-1', instance: 'inst-a', to: '+15550102000', message: 'race' };
    const results = await Promise.all(Array.from({ length: 12 }, () => inject('POST', '/api/v1/traces', body)));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => r.json().id)).size).toBe(1);
  });

  test('an initial status past sent gets its receipt times from sentAt', async () => {
    const t = await ingest({ status: 'read', sentAt: '2026-03-01T10:00:00Z' });
    expect(t).toMatchObject({ status: 'read', sentAt: '2026-03-01T10:00:00.000Z', deliveredAt: '2026-03-01T10:00:00.000Z', readAt: '2026-03-01T10:00:00.000Z' });
  });

  test('400 {detail} for a bad phone, a missing field, an unknown status or an unknown field', async () => {
    const base = { messageId: 'bad', instance: 'i', to: '+15550102000', message: 'm' };
    for (const body of [
      { ...base, to: 'call me' },
      { ...base, to: '+0 12 345' },
      { instance: 'i', to: '+15550102000', message: 'm' },
      { ...base, status: 'bounced' },
      { ...base, sentAt: 'yesterday' },
      { ...base, extra: 1 },
      { ...base, message: 'nul \u0000 inside' },
      { ...base, payload: { body: { text: 'nul \u0000' } } },
    ]) {
      const res = await inject('POST', '/api/v1/traces', body);
      expect(res.statusCode).toBe(400);
      expect(Object.keys(res.json())).toEqual(['detail']);
      expect(typeof res.json().detail).toBe('string');
    }
  });

  test('a blank (white space only) messageId or instance is a 400 naming the field, as the document says; padded ones are kept as sent', async () => {
    const count = async () => (await stack.db.query<{ n: number }>('SELECT count(*)::int AS n FROM traces')).rows[0]?.n;
    const before = await count();
    for (const blank of [' ', '\t\n ', '\u00a0\u3000\ufeff']) {
      for (const field of ['messageId', 'instance']) {
        const res = await inject('POST', '/api/v1/traces', { messageId: 'blank-key', instance: 'inst-a', to: '+15550102000', message: 'm', [field]: blank });
        expect([field, res.statusCode]).toEqual([field, 400]);
        expect(res.json().detail).toMatch(new RegExp(`^Request body is invalid: ${field} `));
      }
      const filter = await inject('GET', `/api/v1/traces?instance=${encodeURIComponent(blank)}`);
      expect(filter.statusCode).toBe(400);
      expect(filter.json().detail).toMatch(/^Request query is invalid: instance /);
    }
    expect(await count()).toBe(before);
    const padded = await ingest({ messageId: ' padded-1 ', instance: ' inst-p ' });
    expect(padded).toMatchObject({ messageId: ' padded-1 ', instance: ' inst-p ' });

    const doc = (await inject('GET', '/api/v1/openapi.json')).json();
    type Json = Record<string, unknown>;
    const deref = (v: unknown): Json => {
      let o = v as Json;
      for (let i = 0; typeof o?.$ref === 'string' && i < 20; i++) o = (o.$ref as string).slice(2).split('/').reduce<unknown>((x, k) => (x as Json)?.[k], doc) as Json;
      return o;
    };
    const post = doc.paths['/api/v1/traces'].post;
    const body = deref((deref(post.requestBody).content as Record<string, Json>)['application/json']?.schema);
    for (const field of ['messageId', 'instance']) {
      const re = new RegExp(deref((body.properties as Json)[field]).pattern as string, 'u');
      expect([field, re.test(' \t\u3000'), re.test(' x ')]).toEqual([field, false, true]);
    }
    const query = deref(doc.paths['/api/v1/traces'].get.parameters.map(deref).find((p: Json) => p.name === 'instance')?.schema);
    expect(new RegExp(query.pattern as string, 'u').test('\u00a0')).toBe(false);
  });
});

describe('single trace and routing', () => {
  test('404 {detail} for an unknown id, uuid or not', async () => {
    for (const id of ['6f1c2b1e-0000-4000-8000-000000000000', 'nope']) {
      const res = await inject('GET', `/api/v1/traces/${id}`);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ detail: `Trace ${id} not found` });
      expect((await receipt(id, 'read')).statusCode).toBe(404);
    }
  });

  test('/traces/analytics is not captured by /traces/{id}', async () => {
    const res = await inject('GET', '/api/v1/traces/analytics');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toHaveProperty('byDay');
    expect(res.json().byDay).toHaveLength(7);
  });
});

describe('status receipts', () => {
  test('forward only: sent → delivered → read; a late delivered never undoes read', async () => {
    const t = await ingest({ sentAt: '2026-05-01T10:00:00Z' });
    let r = await receipt(t.id, 'delivered', '2026-05-01T10:00:05Z');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ status: 'delivered', deliveredAt: '2026-05-01T10:00:05.000Z', readAt: null });
    r = await receipt(t.id, 'read', '2026-05-01T10:01:00Z');
    expect(r.json()).toMatchObject({ status: 'read', deliveredAt: '2026-05-01T10:00:05.000Z', readAt: '2026-05-01T10:01:00.000Z' });
    r = await receipt(t.id, 'delivered', '2026-05-01T10:02:00Z');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ status: 'read', deliveredAt: '2026-05-01T10:00:05.000Z', readAt: '2026-05-01T10:01:00.000Z' });
    r = await receipt(t.id, 'sent');
    expect(r.json().status).toBe('read');
    r = await receipt(t.id, 'failed');
    expect(r.json()).toMatchObject({ status: 'read', failedAt: null });
    expect(r.json().payload).toEqual({ headers: {}, body: {} });
  });

  test('read arriving first fills deliveredAt; the late delivered keeps read and corrects deliveredAt to its earlier time', async () => {
    const t = await ingest({ sentAt: '2026-05-01T10:00:00Z' });
    let r = await receipt(t.id, 'read', '2026-05-01T10:05:00Z');
    expect(r.json()).toMatchObject({ status: 'read', deliveredAt: '2026-05-01T10:05:00.000Z', readAt: '2026-05-01T10:05:00.000Z' });
    r = await receipt(t.id, 'delivered', '2026-05-01T10:00:02Z');
    expect(r.json()).toMatchObject({ status: 'read', deliveredAt: '2026-05-01T10:00:02.000Z', readAt: '2026-05-01T10:05:00.000Z' });
  });

  test('failed is terminal, and only reachable before delivery', async () => {
    const t = await ingest();
    let r = await receipt(t.id, 'failed', '2026-05-01T10:00:00Z');
    expect(r.json().status).toBe('failed');
    expect(r.json().failedAt).not.toBeNull();
    for (const s of ['delivered', 'read', 'sent']) {
      r = await receipt(t.id, s);
      expect(r.statusCode).toBe(200);
      expect(r.json()).toMatchObject({ status: 'failed', deliveredAt: null, readAt: null });
    }
    const d = await ingest();
    await receipt(d.id, 'delivered');
    expect((await receipt(d.id, 'failed')).json()).toMatchObject({ status: 'delivered', failedAt: null });
  });

  test('timestamps are never before sentAt; a receipt without one uses the time of arrival', async () => {
    const t = await ingest({ sentAt: '2026-05-01T10:00:00Z' });
    expect((await receipt(t.id, 'delivered', '2026-04-30T00:00:00Z')).json().deliveredAt).toBe('2026-05-01T10:00:00.000Z');
    const before = Date.now();
    const read = (await receipt(t.id, 'read')).json();
    expect(new Date(read.readAt).getTime()).toBeGreaterThanOrEqual(before - 5_000);
  });

  test('concurrent, out-of-order receipts on many traces always end at read with deliveredAt ≤ readAt', async () => {
    const traces = await Promise.all(Array.from({ length: 20 }, () => ingest({ sentAt: '2026-06-01T00:00:00Z' })));
    const sends: Promise<unknown>[] = [];
    for (const t of traces) {
      const batch = [
        () => receipt(t.id, 'read', '2026-06-01T00:00:30Z'),
        () => receipt(t.id, 'delivered', '2026-06-01T00:00:10Z'),
        () => applyStatusReceipt(stack.db, t.id, 'delivered', new Date('2026-06-01T00:00:20Z')),
        () => applyStatusReceipt(stack.db, t.id, 'read', new Date('2026-06-01T00:00:40Z')),
        () => receipt(t.id, 'sent'),
      ];
      batch.sort(() => Math.random() - 0.5);
      for (const send of batch) sends.push(send());
    }
    await Promise.all(sends);
    const { rows } = await stack.db.query('SELECT status, delivered_at, read_at FROM traces WHERE id = ANY($1::uuid[])', [traces.map((t) => t.id)]);
    expect(rows).toHaveLength(20);
    for (const row of rows) {
      expect(row.status).toBe('read');
      expect(row.delivered_at.toISOString()).toBe('2026-06-01T00:00:10.000Z');
      expect(row.read_at.toISOString()).toBe('2026-06-01T00:00:30.000Z');
    }
  });

  test('400 for an unknown status or a bad timestamp', async () => {
    const t = await ingest();
    expect((await inject('POST', `/api/v1/traces/${t.id}/status`, { status: 'seen' })).statusCode).toBe(400);
    expect((await inject('POST', `/api/v1/traces/${t.id}/status`, { status: 'read', timestamp: 'soon' })).statusCode).toBe(400);
    expect((await inject('POST', `/api/v1/traces/${t.id}/status`, {})).json()).toHaveProperty('detail');
  });
});

describe('list', () => {
  beforeAll(async () => {
    await stack.db.query('TRUNCATE traces');
    const at = (m: number) => new Date(Date.UTC(2026, 6, 1, 12, m)).toISOString();
    for (let i = 0; i < 12; i++) await ingest({ instance: 'alpha', to: '+1 555 010 2000', sentAt: at(i), messageId: `alpha-${i}` });
    for (let i = 0; i < 5; i++) await ingest({ instance: 'beta', to: '+44 20 7946 0958', sentAt: at(20 + i), messageId: `beta-${i}` });
    const { traces } = (await inject('GET', '/api/v1/traces?instance=beta')).json();
    await receipt(traces[0].id, 'delivered');
    await receipt(traces[1].id, 'read');
    await receipt(traces[2].id, 'failed');
  });

  test('default page, newest first, without payload', async () => {
    const body = (await inject('GET', '/api/v1/traces')).json();
    expect(body).toMatchObject({ total: 17, limit: 50, offset: 0 });
    expect(body.traces).toHaveLength(17);
    expect(body.traces[0].messageId).toBe('beta-4');
    expect(body.traces[16].messageId).toBe('alpha-0');
    expect(body.traces[0]).not.toHaveProperty('payload');
  });

  test('filters by instance, status and phone (any accepted form)', async () => {
    const byInstance = (await inject('GET', '/api/v1/traces?instance=alpha')).json();
    expect(byInstance.total).toBe(12);
    expect(byInstance.traces.every((t: { instance: string }) => t.instance === 'alpha')).toBe(true);
    for (const phone of ['+442079460958', '+44 20 7946 0958', '0044 (20) 7946-0958', '442079460958']) {
      const res = await inject('GET', `/api/v1/traces?phone=${encodeURIComponent(phone)}`);
      expect(res.statusCode).toBe(200);
      expect(res.json().total).toBe(5);
    }
    // an unencoded + arrives as a space: the bare digits still carry the country code
    expect((await inject('GET', '/api/v1/traces?phone=+442079460958')).json().total).toBe(5);
    expect((await inject('GET', '/api/v1/traces?status=sent')).json().total).toBe(14);
    expect((await inject('GET', '/api/v1/traces?status=read')).json().traces.map((t: { messageId: string }) => t.messageId)).toEqual(['beta-3']);
    expect((await inject('GET', '/api/v1/traces?status=failed&instance=beta')).json().total).toBe(1);
    expect((await inject('GET', '/api/v1/traces?status=failed&instance=alpha')).json().total).toBe(0);
    const combined = (await inject('GET', `/api/v1/traces?instance=alpha&phone=${encodeURIComponent('+1 (555) 010-2000')}&status=sent`)).json();
    expect(combined.total).toBe(12);
    expect((await inject('GET', '/api/v1/traces?instance=nobody')).json()).toEqual({ traces: [], total: 0, limit: 50, offset: 0 });
  });

  test('pagination: limit/offset pages, bounds 1..500, 501 → 400 {detail}', async () => {
    const page2 = (await inject('GET', '/api/v1/traces?limit=5&offset=5')).json();
    expect(page2).toMatchObject({ total: 17, limit: 5, offset: 5 });
    expect(page2.traces.map((t: { messageId: string }) => t.messageId)).toEqual(['alpha-11', 'alpha-10', 'alpha-9', 'alpha-8', 'alpha-7']);
    const beyond = (await inject('GET', '/api/v1/traces?offset=100')).json();
    expect(beyond).toMatchObject({ traces: [], total: 17, offset: 100 });
    expect((await inject('GET', '/api/v1/traces?limit=500')).statusCode).toBe(200);
    for (const q of ['limit=501', 'limit=0', 'offset=-1', 'offset=100000000000000000000', 'limit=abc', 'status=seen', 'phone=hello', 'instance=a%00b']) {
      const res = await inject('GET', `/api/v1/traces?${q}`);
      expect(res.statusCode).toBe(400);
      expect(Object.keys(res.json())).toEqual(['detail']);
    }
  });
});

describe('a field named like a property of every JavaScript object', () => {
  test('an unknown query parameter or body field named toString, constructor or __proto__ is a 400 naming it (the message named none)', async () => {
    for (const name of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
      const query = await inject('GET', `/api/v1/traces?${name}=1`);
      expect([name, query.statusCode, query.json()]).toEqual([name, 400, { detail: `Request query is invalid: ${name} is not a parameter of this operation; it takes instance, phone, status, limit, offset` }]);
      const analytics = await inject('GET', `/api/v1/traces/analytics?days=1&${name}=1`);
      expect([name, analytics.statusCode, analytics.json()]).toEqual([name, 400, { detail: `Request query is invalid: ${name} is not a parameter of this operation; it takes days` }]);
    }
    for (const name of ['toString', 'valueOf']) {
      const body = await inject('POST', '/api/v1/traces', { messageId: 'odd-field', instance: 'inst-a', to: '+15550102000', message: 'x', [name]: 1 });
      expect([name, body.statusCode, body.json()]).toEqual([name, 400, { detail: `Request body is invalid: ${name} is not a known field` }]);
    }
  });
});

describe('analytics', () => {
  const DAY = 86_400_000;
  const utcDate = (d: Date) => d.toISOString().slice(0, 10);

  test('7-day window: every day present with zeros, all four status keys, by instance, computed over the window only', async () => {
    await stack.db.query('TRUNCATE traces');
    const now = Date.now();
    const sent = [
      { ago: 6 * DAY + 60_000, instance: 'alpha', status: 'sent' },
      { ago: 6 * DAY + 120_000, instance: 'alpha', status: 'read' },
      { ago: 3 * DAY, instance: 'beta', status: 'delivered' },
      { ago: 60_000, instance: 'alpha', status: 'sent' },
      { ago: 9 * DAY, instance: 'gamma', status: 'failed' }, // outside the window
    ];
    for (const s of sent) await ingest({ instance: s.instance, status: s.status, sentAt: new Date(now - s.ago).toISOString() });

    const res = await inject('GET', '/api/v1/traces/analytics?days=7');
    expect(res.statusCode).toBe(200);
    const a = res.json();
    const today = new Date(now);
    const expectedDays = Array.from({ length: 7 }, (_, i) => utcDate(new Date(today.getTime() - (6 - i) * DAY)));
    expect(a.byDay.map((d: { date: string }) => d.date)).toEqual(expectedDays);
    const counts: Record<string, number> = Object.fromEntries(expectedDays.map((d) => [d, 0]));
    const perStatus: Record<string, Record<string, number>> = Object.fromEntries(expectedDays.map((d) => [d, { sent: 0, delivered: 0, read: 0, failed: 0 }]));
    for (const s of sent.slice(0, 4)) {
      const d = utcDate(new Date(now - s.ago));
      if (d in counts) {
        counts[d] = (counts[d] ?? 0) + 1;
        (perStatus[d] as Record<string, number>)[s.status] += 1;
      }
    }
    // each day is split by status too (the board's chart of messages per day by status)
    expect(a.byDay).toEqual(expectedDays.map((date) => ({ date, count: counts[date], byStatus: perStatus[date] })));
    expect(a.byDay.filter((d: { count: number }) => d.count === 0).length).toBeGreaterThanOrEqual(3);
    const inWindow = Object.values(counts).reduce((x, y) => x + y, 0);
    expect(a.totalMessages).toBe(inWindow);
    expect(Object.keys(a.byStatus).sort()).toEqual(['delivered', 'failed', 'read', 'sent']);
    expect(a.byStatus.failed).toBe(0);
    expect(a.byStatus.delivered).toBe(1);
    expect(a.byStatus.sent + a.byStatus.read + a.byStatus.delivered).toBe(inWindow);
    expect(a.byInstance.beta).toBe(1);
    expect(a.byInstance).not.toHaveProperty('gamma');
    expect(a.period.start).toBe(`${expectedDays[0]}T00:00:00.000Z`);
    expect(Math.abs(new Date(a.period.end).getTime() - now)).toBeLessThan(60_000);
  });

  test('an empty window still has every day and all four status keys at zero', async () => {
    await stack.db.query('TRUNCATE traces');
    const a = (await inject('GET', '/api/v1/traces/analytics?days=3')).json();
    expect(a).toMatchObject({ totalMessages: 0, byStatus: { sent: 0, delivered: 0, read: 0, failed: 0 }, byInstance: {} });
    expect(a.byDay).toHaveLength(3);
    expect(a.byDay.every((d: { count: number }) => d.count === 0)).toBe(true);
  });

  test('days is bounded: 0 and 367 are 400 {detail}', async () => {
    for (const days of ['0', '367', 'x']) {
      const res = await inject('GET', `/api/v1/traces/analytics?days=${days}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toHaveProperty('detail');
    }
  });
});

describe('a migration of the next version while the service runs', () => {
  // Ingestion and receipts are prepared statements (parsed once per pooled connection). With `RETURNING *` their
  // result changed shape when a column was added, and PostgreSQL refused each connection's next run ("cached plan
  // must not change result type"): a 500 per pooled connection, the trace not written.
  test('a column added to traces fails no ingestion and no receipt', async () => {
    const warm = await Promise.all(Array.from({ length: 8 }, () => ingest()));
    await Promise.all(warm.map((t) => receipt(t.id, 'delivered')));
    await stack.db.query('ALTER TABLE traces ADD COLUMN next_version_field integer');
    try {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_v, i) => inject('POST', '/api/v1/traces', { messageId: `after-migration-${i}`, instance: 'inst-m', to: '+15550102000', message: 'x' })),
      );
      expect(answers.map((r) => r.statusCode)).toEqual(Array(8).fill(201));
      const receipts = await Promise.all(warm.map((t) => receipt(t.id, 'read')));
      expect(receipts.map((r) => [r.statusCode, r.json().status])).toEqual(Array(8).fill([200, 'read']));
      // and the answers have the documented fields only
      expect(Object.keys(answers[0]?.json() ?? {}).sort()).toEqual(['deliveredAt', 'failedAt', 'id', 'instance', 'message', 'messageId', 'payload', 'readAt', 'sentAt', 'status', 'to']);
    } finally {
      await stack.db.query('ALTER TABLE traces DROP COLUMN next_version_field');
    }
  });
});
