/**
 * Turns events of the outbox into webhookDeliveryWorkflow starts. A cursor row in PostgreSQL records the last
 * dispatched seq; a pass takes it with FOR UPDATE SKIP LOCKED (one replica at a time), starts one workflow per
 * (webhook, event) with id `webhook:<webhookId>:<seq>` (REJECT_DUPLICATE: a repeated start is a no-op) and moves the
 * cursor in the same transaction. Passes run on every event (deps.events), on start (catch-up after downtime) and
 * every few seconds.
 *
 * Seqs can commit out of order (the transaction that took seq 6 commits after the one that took 7), and a rolled-back
 * insert leaves a seq that never commits. A gap stops the cursor until the missing seq commits or is proven rolled
 * back, never on a timer alone: the transaction holding the seq was running when the gap was seen, so once no
 * transaction id older than a horizon taken then is still running (pg_snapshot_xmin), the seq either committed (and
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
import { withTransaction, type Queryable } from '../db/pool';
import { WEBHOOK_EVENTS, activeSubscriptions } from '../db/webhooks';

const BATCH = 200;
/** How long a gap is seen before its horizon is taken (see gapIsFinal). */
const GAP_SETTLE_MS = 1000;
const SWEEP_MS = 5_000;
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
      // taken in this pass, checked from the next one on (this pass's own transaction id is below it)
      g.horizon = (await c.query<{ x: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x')).rows[0]?.x;
      return false;
    }
    const r = await c.query<{ done: boolean }>('SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8 AS done', [g.horizon]);
    return r.rows[0]?.done === true;
  };

  /** One transaction; returns true when there may be more to do right away. */
  const pass = async (): Promise<boolean> =>
    withTransaction(deps.db, async (c) => {
      const cur = await c.query<{ last_seq: string }>('SELECT last_seq FROM webhook_dispatch_cursor WHERE id = 1 FOR UPDATE SKIP LOCKED');
      if (!cur.rows[0]) return false; // another replica is dispatching; the sweep comes back
      let last = Number(cur.rows[0].last_seq);
      const { rows } = await c.query<{ seq: string; type: string; created_at: Date }>('SELECT seq, type, created_at FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [last, BATCH]);
      // the subscriptions are read at most once per pass: when it has an event a webhook can subscribe to, or when
      // whether any webhook is active is not known (at start, after a change to the webhooks)
      let subscriptions: Array<{ id: string; events: string[]; created_at: Date }> | undefined;
      const readSubscriptions = async () => {
        subscriptions = await activeSubscriptions(c);
        subscribed = subscriptions.length > 0;
        return subscriptions;
      };
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
          for (const { id: webhookId } of subs.filter((w) => w.events.includes(r.type) && w.created_at <= r.created_at)) {
            const client = await deps.temporal.client();
            try {
              await client.workflow.start('webhookDeliveryWorkflow', {
                workflowId: webhookWorkflowId(webhookId, seq),
                taskQueue: deps.config.temporal.taskQueue,
                workflowIdReusePolicy: 'REJECT_DUPLICATE',
                args: [{ webhookId, eventSeq: seq }],
              });
            } catch (err) {
              if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
            }
          }
        }
        last = seq;
      }
      for (const missing of gaps.keys()) if (missing <= last) gaps.delete(missing);
      await c.query('UPDATE webhook_dispatch_cursor SET last_seq = $1 WHERE id = 1', [last]);
      return rows.length === BATCH && last === Number(rows[rows.length - 1]?.seq);
    });

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
