/**
 * Task queue names. Every worker polls the shared queue and its own host queue (for work on local worktrees:
 * Temporal's worker-specific task queue pattern). The shared name comes from ARMADA_TASK_QUEUE (default armada).
 */
import os from 'node:os';

export function hostQueue(sharedQueue: string, host: string = os.hostname()): string {
  return `${sharedQueue}-host-${host}`;
}
