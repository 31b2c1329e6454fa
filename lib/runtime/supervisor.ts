/**
 * Keeps a server child of `armada start` (embedded PostgreSQL, Temporal dev server) running: when it dies it is
 * started again after a bounded exponential backoff. Deaths and failed restarts count against a budget (maxFailures
 * within windowMs); once spent, the supervisor gives up and says so once, so the caller can exit non-zero and let
 * systemd or Kubernetes restart the whole suite.
 */
import type { Logger } from '../logger';

/** A running server process as the supervisor sees it. */
export interface ChildServer {
  pid: number;
  /** Resolves (never rejects) when the process has exited, with a short description of how. */
  exited: Promise<string>;
}

export interface RestartPolicy {
  /** Deaths plus failed restarts allowed within windowMs; the one that reaches it makes the supervisor give up. */
  maxFailures: number;
  windowMs: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxFailures: 5, windowMs: 300_000, initialBackoffMs: 500, maxBackoffMs: 15_000 };

export interface SuperviseOptions {
  /** The dependency's name in logs and in the give-up message (`postgres`, `temporal`). */
  name: string;
  /** Starts the server again; resolves once it is ready. */
  restart: () => Promise<ChildServer>;
  policy: RestartPolicy;
  logger: Logger;
  onDown?: (reason: string) => void;
  onUp?: () => void;
  /** Called once when the budget is spent; the supervisor does nothing more. */
  onGiveUp: (message: string) => void;
}

export interface Supervisor {
  /**
   * Stops watching: no restart starts after this. A restart in progress is not awaited (a dev server's readiness wait
   * is up to 60 s, longer than a shutdown step): the owner's stop ends it and stops what it spawned.
   */
  stop(): Promise<void>;
}

/** The delay before the next restart, given how many failures are in the window (1 = the first). */
export function backoffMs(policy: RestartPolicy, failuresInWindow: number): number {
  return Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** Math.max(0, failuresInWindow - 1));
}

export function supervise(first: ChildServer, opts: SuperviseOptions): Supervisor {
  const log = opts.logger.child({ component: 'supervisor', dependency: opts.name });
  const failures: number[] = [];
  let stopped = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  const fail = (reason: string): boolean => {
    const now = Date.now();
    failures.push(now);
    while (failures.length && failures[0] <= now - opts.policy.windowMs) failures.shift();
    if (failures.length < opts.policy.maxFailures) return true;
    const seconds = Math.round(opts.policy.windowMs / 1000);
    opts.onGiveUp(`${opts.name} failed ${failures.length} times within ${seconds} s (last: ${reason}); giving up`);
    return false;
  };
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    });

  const loop = async () => {
    let child = first;
    for (;;) {
      const how = await child.exited;
      if (stopped) return;
      opts.onDown?.(how);
      if (!fail(how)) return;
      for (;;) {
        const delay = backoffMs(opts.policy, failures.length);
        log.warn({ reason: how, restartInMs: delay }, `${opts.name} stopped unexpectedly; restarting`);
        await pause(delay);
        if (stopped) return;
        try {
          child = await opts.restart();
        } catch (err) {
          if (stopped) return;
          const reason = (err as Error)?.message?.split('\n')[0] ?? 'restart failed';
          if (!fail(reason)) return;
          continue;
        }
        if (stopped) return; // the owner's stop has stopped what restart() started
        log.info({ pid: child.pid }, `${opts.name} restarted`);
        opts.onUp?.();
        break;
      }
    }
  };
  loop().catch((err) => log.error({ err }, 'supervisor failed'));
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
    },
  };
}
