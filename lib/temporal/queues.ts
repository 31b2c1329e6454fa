/** Task queue names. Every worker polls the shared queue and its own host queue (for work on local worktrees). */
import os from 'node:os';

export const SHARED_QUEUE = 'armada';

export function hostQueue(host: string = os.hostname()): string {
  return `armada-host-${host}`;
}
