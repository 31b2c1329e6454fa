/**
 * Turns events of the outbox into webhookDeliveryWorkflow starts. A cursor row in PostgreSQL records the last
 * dispatched seq; a pass (one replica at a time: a session advisory lock) reads it and the events after it, starts one
 * workflow per (webhook, event) with id `webhook:<webhookId>:<seq>` (REJECT_DUPLICATE: a repeated start is a no-op),
 * then moves the cursor with a compare-and-set. No transaction is open while Temporal answers: until session 51 the
 * pass held the cursor row (FOR UPDATE) in a transaction around the starts, so a slow Temporal kept it open, and one
 * stalled past idle_in_transaction_session_timeout was rolled back and its pass repeated. Passes run on every event
 * (deps.events), on start (catch-up after downtime) and every few seconds.
 *
 * Seqs can commit out of order (the transaction that took seq 6 commits after the one that took 7), and a rolled-back
 * insert leaves a seq that never commits. A gap stops the cursor until the missing seq commits or is proven rolled
 * back, never on a timer alone: the transaction holding the seq was running when the gap was seen, so once no
 * transaction id older than a horizon taken then is still running in this database (lib/events/xidHorizon.ts), the seq either committed (and
 * is read) or never will. See gapIsFinal.
 *
 * While no webhook is active (the last pass read none), an event starts no pass: the sweep still moves the cursor,
 * and a change to the webhooks table (a NOTIFY on armada_webhooks_changed, migration 080) starts one at once. A
 * webhook gets the events created from its own creation on, so one created while the cursor lagged gets no older ones.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Pool } from 'pg';
import type { EventListener } from '../events/listener';
import type { Logger } from '../logger';
import type { TemporalHandle } from '../temporal/client';
import type { Queryable } from '../db/pool';
import { WEBHOOK_EVENTS, activeSubscriptions } from '../db/webhooks';
import { endedBelow, HORIZON_SQL } from '../events/xidHorizon';

const BATCH = 200;
/** How long a gap is seen before its horizon is taken (see gapIsFinal). */
const GAP_SETTLE_MS = 1000;
const SWEEP_MS = 5_000;
/** How long a delivery workflow's start may wait for Temporal before the pass fails (and is tried again). */
const START_TIMEOUT_MS = 10_000;
/** The session advisory lock (hashtext of this name) of a dispatch pass: one replica at a time. */
const DISPATCH_LOCK = 'armada-webhook-dispatch';
const SUPPORTED = new Set<string>(WEBHOOK_EVENTS);
export const WEBHOOKS_CHANGED_CHANNEL = 'armada_webhooks_changed';

export interface WebhookDispatcherDeps {
  db: Pool;
  events: EventListener;
  temporal: TemporalHandle;
  logger: Logger;
  config: { temporal: { taskQueue: string } };
}

export interface WebhookDispatcher {
  /** Runs a pass now (or right after the running one). */
  kick(): void;
  /** Resolves when no pass is running or queued (tests). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export const webhookWorkflowId = (webhookId: string, seq: number) => `webhook:${webhookId}:${seq}`;

export function startWebhookDispatcher(deps: WebhookDispatcherDeps, opts: { gapSettleMs?: number; sweepMs?: number } = {}): WebhookDispatcher {
  const gapSettleMs = opts.gapSettleMs ?? GAP_SETTLE_MS;
  const log = deps.logger.child({ component: 'webhook-dispatcher' });
  /** first missing seq → when the gap was first seen, and the transaction-id horizon taken after it settled */
  const gaps = new Map<number, { since: number; horizon?: string }>();
  let stopped = false;
  let again = false;
  let running: Promise<void> | undefined;
  let recheck: NodeJS.Timeout | undefined;
  /** whether an active webhook exists, as the last read of the subscriptions said (undefined: not known) */
  let subscribed: boolean | undefined;

  /**
   * True once the missing seq can no longer commit. The insert that took it runs in a transaction that had started
   * before the later seq committed; it gets its transaction id with the insert, microseconds after taking the seq, so
   * a horizon (the next transaction id) taken gapSettleMs after the gap was first seen is above that id. When no
   * transaction id below the horizon is running any more, that transaction has committed or rolled back.
   * A seq held by a long-open transaction keeps the cursor (and later webhooks) waiting until it ends; it is not skipped.
   */
  const gapIsFinal = async (c: Queryable, missing: number): Promise<boolean> => {
    const g = gaps.get(missing) ?? { since: Date.now() };
    gaps.set(missing, g);
    if (Date.now() - g.since < gapSettleMs) return false;
    if (!g.horizon) {
      // taken in this pass, checked from the next one on (a pass holds no transaction: only other sessions' ids count)
      g.horizon = (await c.query<{ x: string }>(`SELECT ${HORIZON_SQL} AS x`)).rows[0]?.x;
      return false;
    }
    return endedBelow(c, g.horizon);
  };

  /**
   * One pass, holding no transaction while Temporal answers: the cursor and a batch of events are read, the workflows
   * started, then the cursor moved with a compare-and-set. Returns true when there may be more to do right away.
   * One replica dispatches at a time: the pass holds a session advisory lock (on a connection that is in no
   * transaction), and a replica that finds it taken skips the pass. Should that lock be lost (the connection broken)
   * while another replica goes on, both start the same workflows (no-ops by id) and only one moves the cursor.
   */
  const pass = async (): Promise<boolean> => {
    const c = await deps.db.connect();
    let locked = false;
    try {
      locked = (await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [DISPATCH_LOCK])).rows[0]?.ok === true;
      if (!locked) return false; // another replica is dispatching; the sweep comes back
      return await dispatchBatch(c);
    } finally {
      // a connection that still holds the lock is never given back to the pool
      const unlocked = !locked || (await c.query('SELECT pg_advisory_unlock(hashtext($1))', [DISPATCH_LOCK]).then(() => true, () => false));
      c.release(!unlocked);
    }
  };

  /** The batch after the cursor: its workflows started, then the cursor moved past what was done (also on a failure). */
  const dispatchBatch = async (c: Queryable): Promise<boolean> => {
    const cur = await c.query<{ last_seq: string }>('SELECT last_seq FROM webhook_dispatch_cursor WHERE id = 1');
    if (!cur.rows[0]) return false;
    const from = Number(cur.rows[0].last_seq);
    let last = from;
    const { rows } = await c.query<{ seq: string; type: string; created_at: Date }>('SELECT seq, type, created_at FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [last, BATCH]);
    // the subscriptions are read at most once per pass: when it has an event a webhook can subscribe to, or when
    // whether any webhook is active is not known (at start, after a change to the webhooks)
    let subscriptions: Array<{ id: string; events: string[]; created_at: Date }> | undefined;
    const readSubscriptions = async () => {
      subscriptions = await activeSubscriptions(c);
      subscribed = subscriptions.length > 0;
      return subscriptions;
    };
    /** Moves the cursor from `from` to `last` unless another dispatcher moved it meanwhile; whether it did. */
    const advance = async () =>
      last === from || ((await c.query('UPDATE webhook_dispatch_cursor SET last_seq = $1 WHERE id = 1 AND last_seq = $2', [last, from])).rowCount ?? 0) > 0;
    try {
      if (subscribed === undefined) await readSubscriptions();
      for (const r of rows) {
        const seq = Number(r.seq);
        if (seq !== last + 1) {
          if (!(await gapIsFinal(c, last + 1))) {
            scheduleRecheck();
            break; // the missing seq may still commit
          }
          gaps.delete(last + 1);
          // a missing seq that committed before the check is read by the next pass, not skipped
          const filled = await c.query('SELECT 1 FROM events WHERE seq > $1 AND seq < $2 LIMIT 1', [last, seq]);
          if (filled.rows.length) {
            again = true;
            break;
          }
        }
        if (SUPPORTED.has(r.type)) {
          const subs = subscriptions ?? (await readSubscriptions());
          for (const { id: webhookId } of subs.filter((w) => w.events.includes(r.type) && w.created_at <= r.created_at)) await startDelivery(webhookId, seq);
        }
        last = seq;
      }
    } catch (err) {
      // the events before the one that failed were dispatched: the next pass goes on from there
      await advance().catch(() => undefined);
      throw err;
    }
    for (const missing of gaps.keys()) if (missing <= last) gaps.delete(missing);
    if (!(await advance())) return false; // another dispatcher moved the cursor: its passes go on from there
    return rows.length === BATCH && last === Number(rows[rows.length - 1]?.seq);
  };

  /** The delivery workflow of (webhook, event), by id: a repeated start, or one of a delivery that ran, is a no-op. */
  const startDelivery = async (webhookId: string, seq: number): Promise<void> => {
    const client = await deps.temporal.client();
    try {
      // bounded: a Temporal that does not answer fails the pass (retried by the sweep), so it cannot hold the lock for good
      await client.connection.withDeadline(Date.now() + START_TIMEOUT_MS, () =>
        client.workflow.start('webhookDeliveryWorkflow', {
          workflowId: webhookWorkflowId(webhookId, seq),
          taskQueue: deps.config.temporal.taskQueue,
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          args: [{ webhookId, eventSeq: seq }],
        }),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  };

  const loop = async () => {
    do {
      again = false;
      try {
        while (!stopped && (await pass()));
      } catch (err) {
        if (!stopped) log.warn({ err: { message: (err as Error).message } }, 'webhook dispatch pass failed; retrying');
      }
    } while (again && !stopped);
    running = undefined;
  };

  const scheduleRecheck = () => {
    if (recheck || stopped) return;
    recheck = setTimeout(
      () => {
        recheck = undefined;
        kick();
      },
      Math.max(50, Math.min(gapSettleMs, 1000)),
    );
    recheck.unref();
  };

  const kick = () => {
    if (stopped) return;
    if (running) again = true;
    else running = loop();
  };

  const unsubscribe = deps.events.subscribe([], (e) => {
    if (SUPPORTED.has(e.type) && subscribed !== false) kick();
  });
  // a webhook created, changed or deleted anywhere (or a lost listener connection: null): read them again
  const unwatch = deps.events.watch(WEBHOOKS_CHANGED_CHANNEL, () => {
    subscribed = undefined;
    kick();
  });
  const sweep = setInterval(kick, opts.sweepMs ?? SWEEP_MS);
  sweep.unref();
  kick();

  return {
    kick,
    async idle() {
      while (running) await running;
    },
    async stop() {
      stopped = true;
      clearInterval(sweep);
      if (recheck) clearTimeout(recheck);
      unsubscribe();
      unwatch();
      while (running) await running;
    },
  };
}
