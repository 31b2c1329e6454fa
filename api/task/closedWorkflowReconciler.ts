/**
 * Ends the work whose workflow Temporal closed without it: every minute (the first pass a minute after the start:
 * nothing is lost by waiting, and a start calls Temporal no more than before), each attempt still `running`
 * (lib/attempts/closedWorkflows.ts) and each approval still `pending` (lib/approvals/closedWorkflows.ts) whose
 * workflow closed more than `attempts.closedWorkflowGraceMs` (default 60 s) ago is recorded cancelled, saying how the
 * workflow ended (the attempt's log, the approval's `approval.cancelled` event).
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { reconcileClosedApprovalWorkflows } from '../../lib/approvals/closedWorkflows';
import { approvalMetrics } from '../../lib/approvals/metrics';
import { reconcileClosedAttemptWorkflows } from '../../lib/attempts/closedWorkflows';
import type { Logger } from '../../lib/logger';
import type { AttemptServiceDeps } from './attemptService';

/** Longer than a running agent's try needs to hear of the end itself (its heartbeat's "not found", then Temporal's answer). */
const CLOSED_FOR_MS = 60_000;
const EVERY_MS = 60_000;
/** How long the service's close waits for a pass in progress (one stuck on a Temporal that does not answer is left). */
const STOP_WAIT_MS = 5000;

/** What one pass recorded cancelled. */
export interface ClosedWorkflowPass {
  attempts: string[];
  approvals: string[];
}

export interface ClosedWorkflowReconciler {
  /** Runs one pass now (tests); resolves with what it recorded cancelled. */
  runOnce(): Promise<ClosedWorkflowPass>;
  stop(): Promise<void>;
}

type Deps = AttemptServiceDeps & { logger: Logger };

/** One kind of work the pass looks at: its reconcile, and what is said (and counted) of what it recorded. */
interface Kind {
  key: keyof ClosedWorkflowPass;
  reconcile: (db: Pool, client: Client, closedForMs: number) => Promise<string[]>;
  message: string;
  recorded?: (deps: Deps, ids: string[]) => void;
}

const KINDS: Kind[] = [
  {
    key: 'attempts',
    reconcile: reconcileClosedAttemptWorkflows,
    message: 'recorded attempts cancelled whose workflow Temporal had closed (terminated) while they ran',
  },
  {
    key: 'approvals',
    reconcile: reconcileClosedApprovalWorkflows,
    message: 'recorded approvals cancelled whose workflow Temporal had closed (terminated) while they were pending',
    recorded: (deps, ids) => approvalMetrics(deps.metrics.registry).decided.inc({ status: 'cancelled' }, ids.length),
  },
];

export function startClosedWorkflowReconciler(deps: Deps, opts: { everyMs?: number } = {}): ClosedWorkflowReconciler {
  const log = deps.logger.child({ component: 'closed-workflow-reconciler' });
  const closedForMs = deps.config.file.attempts?.closedWorkflowGraceMs ?? CLOSED_FOR_MS;
  /** One kind's pass; a failure is logged and leaves the other kinds' passes to run. */
  const pass = async (client: Client, kind: Kind): Promise<string[]> => {
    try {
      const ids = await kind.reconcile(deps.db, client, closedForMs);
      if (ids.length) {
        log.warn({ [kind.key]: ids }, kind.message);
        kind.recorded?.(deps, ids);
      }
      return ids;
    } catch (err) {
      log.warn({ err: { message: (err as Error).message }, kind: kind.key }, 'closed-workflow reconciliation failed; retrying later');
      return [];
    }
  };
  let running: Promise<ClosedWorkflowPass> | undefined;
  const runOnce = (): Promise<ClosedWorkflowPass> => {
    // while Temporal or PostgreSQL is known down the pass waits for the next minute (the outage is logged once already)
    if (deps.dependencies?.isDown('temporal') || deps.dependencies?.isDown('postgres')) return Promise.resolve({ attempts: [], approvals: [] });
    running ??= (async () => {
      const result: ClosedWorkflowPass = { attempts: [], approvals: [] };
      const client = await deps.temporal.client();
      for (const kind of KINDS) result[kind.key] = await pass(client, kind);
      return result;
    })()
      .catch((err) => {
        log.warn({ err: { message: (err as Error).message } }, 'closed-workflow reconciliation failed; retrying later');
        return { attempts: [], approvals: [] };
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void runOnce(), opts.everyMs ?? EVERY_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      clearInterval(timer);
      if (running) await Promise.race([running, new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
    },
  };
}
