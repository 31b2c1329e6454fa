/**
 * A stop that always ends: `armada start` stops its parts in order (HTTP, workers, probes, clients, servers), each
 * within a limit. A part that does not stop in time is named in a warning and left behind, and the next one is
 * stopped anyway, so Ctrl-C or SIGTERM never waits forever on one stuck part (the servers are stopped last, with
 * SIGKILL after their own grace).
 */
import type { Logger } from '../logger';

export interface ShutdownStep {
  /** What is being stopped, as the warning names it ("http", "workers", "postgres and temporal"). */
  name: string;
  limitMs: number;
  run: () => Promise<unknown> | undefined;
}

/**
 * Runs the steps one after the other; resolves with the names of those that did not finish within their limit. A step
 * that fails is named in a warning too.
 */
export async function runShutdownSteps(logger: Pick<Logger, 'warn'>, steps: ShutdownStep[]): Promise<string[]> {
  const late: string[] = [];
  for (const step of steps) {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), step.limitMs);
      timer.unref();
    });
    const done = Promise.resolve()
      .then(step.run)
      .then(
        () => 'done' as const,
        (err: unknown) => {
          // a step that fails has stopped as far as it can: named, and the next one goes on
          logger.warn({ step: step.name, err: { message: (err as Error)?.message } }, `shutdown: ${step.name} failed (${(err as Error)?.message}); going on`);
          return 'done' as const;
        },
      );
    const outcome = await Promise.race([done, timedOut]);
    clearTimeout(timer);
    if (outcome === 'late') {
      late.push(step.name);
      logger.warn({ step: step.name, limitMs: step.limitMs }, `shutdown: ${step.name} did not stop within ${step.limitMs / 1000} s; going on without it`);
    }
  }
  return late;
}
