import crypto from 'node:crypto';
import type { Client } from '@temporalio/client';
import { createEventListener, type EventListener } from '../../lib/events/listener';
import { publishEvent } from '../../lib/events/publish';
import { withTransaction } from '../../lib/db/pool';
import { createTemporalHandle, type TemporalHandle } from '../../lib/temporal/client';
import { workflowStatus } from '../../lib/temporal/workflowHandles';
import { startWebhookDispatcher, webhookWorkflowId, type WebhookDispatcher } from '../../lib/webhooks/dispatcher';
import { createTestDatabase, env, eventually, logger } from '../support/harness';
import { startTcpProxy } from '../support/tcpProxy';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let temporal: TemporalHandle;
const listeners: EventListener[] = [];
const dispatchers: WebhookDispatcher[] = [];
// no worker polls this queue: the started delivery workflows just wait, and are terminated at the end
const taskQueue = `dispatch-${crypto.randomBytes(4).toString('hex')}`;
const started: string[] = [];
const webhookId = `wh-${crypto.randomBytes(4).toString('hex')}`;

/** The real Temporal client, with workflow.start counted (every start the dispatchers make). */
function countingTemporal(inner: TemporalHandle): TemporalHandle {
  return {
    async client() {
      const c = await inner.client();
      return new Proxy(c, {
        get(target, prop) {
          if (prop !== 'workflow') return Reflect.get(target, prop);
          const wf = target.workflow;
          return new Proxy(wf, {
            get(t, p) {
              if (p !== 'start') return Reflect.get(t, p);
              return async (...args: Parameters<Client['workflow']['start']>) => {
                started.push((args[1] as { workflowId: string }).workflowId);
                return t.start(...args);
              };
            },
          });
        },
      }) as Client;
    },
    reconnect: () => inner.reconnect(),
    close: () => inner.close(),
  };
}

async function dispatcher({ temporal: through = temporal, ...opts }: { gapSettleMs?: number; sweepMs?: number; temporal?: TemporalHandle } = {}) {
  const events = await createEventListener(database.url, database.pool, logger);
  listeners.push(events);
  const d = startWebhookDispatcher({ db: database.pool, events, temporal: countingTemporal(through), logger, config: { temporal: { taskQueue } } }, { sweepMs: 200, ...opts });
  dispatchers.push(d);
  return d;
}

const cursor = async () => Number((await database.pool.query('SELECT last_seq FROM webhook_dispatch_cursor')).rows[0].last_seq);

beforeAll(async () => {
  database = await createTestDatabase();
  temporal = createTemporalHandle(env('ARMADA_TEST_TEMPORAL_ADDRESS'), 'default');
  await database.pool.query("INSERT INTO webhooks (id, url, events, secret) VALUES ($1, 'http://127.0.0.1:9/x', '{attempt.failed}', 'v1:x:y:z')", [webhookId]);
});
afterAll(async () => {
  for (const d of dispatchers) await d.stop();
  for (const l of listeners) await l.close();
  const client = await temporal.client();
  await Promise.allSettled([...new Set(started)].map((id) => client.workflow.getHandle(id).terminate('test over')));
  await temporal.close();
  await database.drop();
});

describe('webhook dispatcher', () => {
  test('two replicas dispatch each (webhook, event) once; events without subscribers only move the cursor', async () => {
    await dispatcher();
    await dispatcher();
    const seqs: number[] = [];
    for (let i = 0; i < 20; i++) {
      seqs.push((await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { i } })).seq);
      await publishEvent(database.pool, { type: 'task.created', topics: [], data: { i } }); // no webhook wants it
    }
    const last = (await publishEvent(database.pool, { type: 'task.created', topics: [], data: {} })).seq;
    await eventually(async () => (await cursor()) === last, 20_000, 100);
    expect(started.sort()).toEqual(seqs.map((s) => `webhook:${webhookId}:${s}`).sort());
  });

  test('an uncommitted earlier seq holds the cursor back until it commits (nothing skipped)', async () => {
    const before = started.length;
    const client = await database.pool.connect();
    await client.query('BEGIN');
    const early = await publishEvent(client, { type: 'attempt.failed', topics: [], data: { early: true } });
    const late = await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { late: true } });
    await new Promise((r) => setTimeout(r, 800));
    expect(await cursor()).toBe(early.seq - 1);
    expect(started.length).toBe(before);
    await client.query('COMMIT');
    client.release();
    await eventually(async () => (await cursor()) === late.seq, 20_000, 100);
    expect(started.slice(before).sort()).toEqual([`webhook:${webhookId}:${early.seq}`, `webhook:${webhookId}:${late.seq}`].sort());
  });

  test('a seq whose transaction commits long after the gap was seen is dispatched, not skipped', async () => {
    for (const d of dispatchers.splice(0)) await d.stop();
    await dispatcher({ gapSettleMs: 200 });
    const before = started.length;
    const client = await database.pool.connect();
    await client.query('BEGIN');
    const early = await publishEvent(client, { type: 'attempt.failed', topics: [], data: { slow: true } });
    const late = await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { afterSlow: true } });
    // many times the settle time (the old rule skipped a gap after its grace period): the cursor waits
    await new Promise((r) => setTimeout(r, 3000));
    expect(await cursor()).toBe(early.seq - 1);
    await client.query('COMMIT');
    client.release();
    await eventually(async () => (await cursor()) === late.seq, 20_000, 100);
    expect(started.slice(before).sort()).toEqual([`webhook:${webhookId}:${early.seq}`, `webhook:${webhookId}:${late.seq}`].sort());
  });

  test('a rolled-back seq does not hold later events back: it is skipped once its transaction has ended', async () => {
    for (const d of dispatchers.splice(0)) await d.stop();
    await dispatcher({ gapSettleMs: 200 });
    const rolledBack = await withTransaction(database.pool, async (c) => {
      const e = await publishEvent(c, { type: 'attempt.failed', topics: [], data: {} });
      throw Object.assign(new Error('roll back'), { seq: e.seq });
    }).catch((err: { seq: number }) => err.seq);
    const after = await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { after: true } });
    expect(after.seq).toBe(rolledBack + 1);
    const t0 = Date.now();
    await eventually(async () => (await cursor()) === after.seq, 20_000, 100);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(started).toContain(`webhook:${webhookId}:${after.seq}`);
    expect(started).not.toContain(`webhook:${webhookId}:${rolledBack}`);
  });

  test('no active webhook: events start no pass; a webhook made later starts one and gets only the events after its creation', async () => {
    for (const d of dispatchers.splice(0)) await d.stop();
    await database.pool.query('UPDATE webhooks SET active = false');
    const d = await dispatcher({ sweepMs: 600_000 }); // no sweep during the test: only events and changes start passes
    await new Promise((r) => setTimeout(r, 300));
    await d.idle();
    const before = await cursor();
    const quiet: { seq: number }[] = [];
    for (let i = 0; i < 5; i++) quiet.push(await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { quiet: i } }));
    await new Promise((r) => setTimeout(r, 800));
    expect(await cursor()).toBe(before); // no pass ran for them
    const startedBefore = started.length;
    const later = `wh-${crypto.randomBytes(4).toString('hex')}`;
    await database.pool.query("INSERT INTO webhooks (id, url, events, secret) VALUES ($1, 'http://127.0.0.1:9/x', '{attempt.failed}', 'v1:x:y:z')", [later]);
    await eventually(async () => (await cursor()) === quiet.at(-1)?.seq, 10_000, 50);
    expect(started.length).toBe(startedBefore); // the events before its creation are not its events
    const after = await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { after: true } });
    await eventually(async () => started.includes(`webhook:${later}:${after.seq}`), 10_000, 50);
    expect(started.slice(startedBefore)).toEqual([`webhook:${later}:${after.seq}`]);
  });

  test('a Temporal that holds its answers holds no PostgreSQL transaction open; once it answers, each event is delivered once', async () => {
    for (const d of dispatchers.splice(0)) await d.stop();
    await database.pool.query('UPDATE webhooks SET active = false');
    const held = `wh-${crypto.randomBytes(4).toString('hex')}`;
    await database.pool.query("INSERT INTO webhooks (id, url, events, secret) VALUES ($1, 'http://127.0.0.1:9/x', '{attempt.failed}', 'v1:x:y:z')", [held]);
    const proxy = await startTcpProxy(env('ARMADA_TEST_TEMPORAL_ADDRESS'));
    const proxied = createTemporalHandle(proxy.address, 'default');
    const direct = await temporal.client();
    const seqs: number[] = [];
    try {
      await proxied.client(); // connected before the proxy holds the answers
      const d = await dispatcher({ temporal: proxied, sweepMs: 100 });
      await d.idle();
      const from = await cursor();
      proxy.setMode('holdAnswers');
      for (let i = 0; i < 3; i++) seqs.push((await publishEvent(database.pool, { type: 'attempt.failed', topics: [], data: { held: i } })).seq);
      // the first start reached Temporal, and its answer is held: the dispatcher waits on it
      await eventually(async () => ((await workflowStatus(direct, webhookWorkflowId(held, seqs[0] as number))) ? true : undefined), 10_000, 50);
      await new Promise((r) => setTimeout(r, 1500));
      // until session 51 the pass waited inside its transaction (the cursor row locked): `idle in transaction`
      const open = await database.pool.query<{ state: string; query: string }>(
        "SELECT state, query FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
      );
      expect(open.rows).toEqual([]);
      expect(await cursor()).toBe(from); // nothing is recorded dispatched before Temporal answers
      // the cursor row is free: a writer does not wait for the held pass
      const c = await database.pool.connect();
      try {
        await c.query("SET lock_timeout = '1s'");
        await c.query('BEGIN');
        await c.query('SELECT last_seq FROM webhook_dispatch_cursor WHERE id = 1 FOR UPDATE');
        await c.query('ROLLBACK');
      } finally {
        await c.query('RESET lock_timeout');
        c.release();
      }
      proxy.setMode('forward');
      await eventually(async () => ((await cursor()) >= (seqs.at(-1) as number) ? true : undefined), 30_000, 100);
      // one run of each event's delivery workflow, none twice
      for (const seq of seqs) {
        const runs: string[] = [];
        for await (const w of direct.workflow.list({ query: `WorkflowId = '${webhookWorkflowId(held, seq)}'` })) runs.push(w.runId);
        expect({ seq, runs: runs.length }).toEqual({ seq, runs: 1 });
      }
    } finally {
      proxy.setMode('forward');
      for (const d of dispatchers.splice(0)) await d.stop(); // before their way to Temporal closes
      await proxied.close();
      await proxy.close();
    }
  }, 60_000);
});
