/**
 * Ends the work whose workflow Temporal closed without it: every minute (the first pass a minute after the start:
 * nothing is lost by waiting, and a start calls Temporal no more than before), each attempt still `running`
 * (lib/attempts/closedWorkflows.ts) and each approval still `pending` (lib/approvals/closedWorkflows.ts) whose
 * workflow closed more than `attempts.closedWorkflowGraceMs` (default 60 s) ago is recorded (the attempt cancelled,
 * the approval cancelled or expired), saying how the workflow ended (the attempt's log, the approval's event). A pass
 * asks Temporal only about the rows still open in PostgreSQL, at most OPEN_ROWS_PER_PASS of each kind, the next pass
 * going on from there: what was recorded before is never read again.
 */
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { reconcileClosedApprovalWorkflows } from '../../lib/approvals/closedWorkflows';
import { approvalMetrics } from '../../lib/approvals/metrics';
import { reconcileClosedAttemptWorkflows } from '../../lib/attempts/closedWorkflows';
import { attemptMetrics } from '../../lib/attempts/metrics';
import type { OpenRowsWalk } from '../../lib/db/openRowsWalk';
import type { Logger } from '../../lib/logger';
import type { AttemptServiceDeps } from './attemptService';

/** Longer than a running agent's try needs to hear of the end itself (its heartbeat's "not found", then Temporal's answer). */
const CLOSED_FOR_MS = 60_000;
const EVERY_MS = 60_000;
/** How long the service's close waits for a pass in progress (one stuck on a Temporal that does not answer is left). */
const STOP_WAIT_MS = 5000;

/** What one pass recorded: the attempts (cancelled) and the approvals (cancelled or expired). */
export interface ClosedWorkflowPass {
  attempts: string[];
  approvals: string[];
}

/** What one kind's reconcile recorded: the ids, and (approvals) each one's status or (attempts) each one's agent. */
interface KindPass {
  recorded: string[];
  statuses?: string[];
  llms?: string[];
}

export interface ClosedWorkflowReconciler {
  /** Runs one pass now (tests); resolves with what it recorded. */
  runOnce(): Promise<ClosedWorkflowPass>;
  stop(): Promise<void>;
}

type Deps = AttemptServiceDeps & { logger: Logger };

/** One kind of work the pass looks at: its reconcile, and what is said (and counted) of what it recorded. */
interface Kind {
  key: keyof ClosedWorkflowPass;
  reconcile: (db: Pool, client: Client, closedForMs: number, walk: OpenRowsWalk) => Promise<KindPass>;
  message: string;
  recorded?: (deps: Deps, pass: KindPass) => void;
}

const KINDS: Kind[] = [
  {
    key: 'attempts',
    reconcile: reconcileClosedAttemptWorkflows,
    message: 'recorded attempts cancelled whose workflow Temporal had closed (terminated) while they ran',
    recorded: (deps, pass) => {
      const attempts = attemptMetrics(deps.metrics.registry).attempts;
      for (const llm of pass.llms ?? []) attempts.inc({ llm, status: 'cancelled' });
    },
  },
  {
    key: 'approvals',
    reconcile: reconcileClosedApprovalWorkflows,
    message: 'recorded approvals cancelled or expired (past their expiry) whose workflow Temporal had closed (terminated) while they were pending',
    recorded: (deps, pass) => {
      const decided = approvalMetrics(deps.metrics.registry).decided;
      for (const status of pass.statuses ?? []) decided.inc({ status });
    },
  },
];

export function startClosedWorkflowReconciler(deps: Deps, opts: { everyMs?: number } = {}): ClosedWorkflowReconciler {
  const log = deps.logger.child({ component: 'closed-workflow-reconciler' });
  const closedForMs = deps.config.file.attempts?.closedWorkflowGraceMs ?? CLOSED_FOR_MS;
  // each kind's walk over its open rows, kept from pass to pass
  const walks: Record<keyof ClosedWorkflowPass, OpenRowsWalk> = { attempts: {}, approvals: {} };
  /** One kind's pass; a failure is logged and leaves the other kinds' passes to run. */
  const pass = async (client: Client, kind: Kind): Promise<string[]> => {
    try {
      const done = await kind.reconcile(deps.db, client, closedForMs, walks[kind.key]);
      const ids = done.recorded;
      if (ids.length) {
        log.warn({ [kind.key]: ids, ...(done.statuses ? { statuses: done.statuses } : {}) }, kind.message);
        kind.recorded?.(deps, done);
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
