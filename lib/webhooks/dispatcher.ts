/**
 * Turns events of the outbox into webhookDeliveryWorkflow starts. A cursor row in PostgreSQL records the last
 * dispatched seq; a pass takes it with FOR UPDATE SKIP LOCKED (one replica at a time), starts one workflow per
 * (webhook, event) with id `webhook:<webhookId>:<seq>` (REJECT_DUPLICATE: a repeated start is a no-op) and moves the
 * cursor in the same transaction. Passes run on every event (deps.events), on start (catch-up after downtime) and
 * every few seconds. Seqs can commit out of order: a gap stops the cursor until the missing seq commits or
 * GAP_GRACE_MS passes (then it was a rolled-back insert).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Pool } from 'pg';
import type { EventListener } from '../events/listener';
import type { Logger } from '../logger';
import type { TemporalHandle } from '../temporal/client';
import { withTransaction } from '../db/pool';
import { WEBHOOK_EVENTS, webhooksFor } from '../db/webhooks';

const BATCH = 200;
const GAP_GRACE_MS = 10_000;
const SWEEP_MS = 5_000;
const SUPPORTED = new Set<string>(WEBHOOK_EVENTS);

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

export function startWebhookDispatcher(deps: WebhookDispatcherDeps, opts: { gapGraceMs?: number; sweepMs?: number } = {}): WebhookDispatcher {
  const gapGraceMs = opts.gapGraceMs ?? GAP_GRACE_MS;
  const log = deps.logger.child({ component: 'webhook-dispatcher' });
  const gapSeen = new Map<number, number>();
  let stopped = false;
  let again = false;
  let running: Promise<void> | undefined;

  /** One transaction; returns true when there may be more to do right away. */
  const pass = async (): Promise<boolean> =>
    withTransaction(deps.db, async (c) => {
      const cur = await c.query<{ last_seq: string }>('SELECT last_seq FROM webhook_dispatch_cursor WHERE id = 1 FOR UPDATE SKIP LOCKED');
      if (!cur.rows[0]) return false; // another replica is dispatching; the sweep comes back
      let last = Number(cur.rows[0].last_seq);
      const { rows } = await c.query<{ seq: string; type: string }>('SELECT seq, type FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [last, BATCH]);
      for (const r of rows) {
        const seq = Number(r.seq);
        if (seq !== last + 1) {
          const since = gapSeen.get(last + 1) ?? Date.now();
          gapSeen.set(last + 1, since);
          if (Date.now() - since < gapGraceMs) break; // the missing seq may still commit
          gapSeen.delete(last + 1);
        }
        if (SUPPORTED.has(r.type)) {
          for (const webhookId of await webhooksFor(c, r.type)) {
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

  const kick = () => {
    if (stopped) return;
    if (running) again = true;
    else running = loop();
  };

  const unsubscribe = deps.events.subscribe([], (e) => {
    if (SUPPORTED.has(e.type)) kick();
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
      unsubscribe();
      while (running) await running;
    },
  };
}
