/**
 * Getting an assignment (an `agent_tasks` row) to its agent's actor, once.
 *
 * POST /tasks commits the row, then sends the actor's `assign` signal and marks the row queued (`queued_at`) once
 * Temporal took it. A row still `assigned` and never queued `LOST_AFTER_MS` after it was written lost its signal (the
 * API replica died in between, or the signal failed): the periodic check of every replica claims such rows one at a
 * time (SKIP LOCKED plus a claim that expires, so two replicas never send the same row at once) and sends them as the
 * request would have. A signal that still arrives twice (the original request was only slow) runs nothing twice: the
 * actor ignores a task it holds, and a finished row is skipped by `runAgentTask`.
 */
import type { Pool } from 'pg';
import { AGENT_REMOVED } from '../../lib/agents/agentTaskErrors';
import { claimLostAssignment, failUnqueuedAgentTask, markAgentTaskQueued, releaseAssignmentClaim, type LostAssignment } from '../../lib/db/agentTasks';
import type { Logger } from '../../lib/logger';
import type { AgentActors } from './agentActors';
import { isAgentRemoved } from './removedAgents';

export interface AssignmentDeps {
  actors: AgentActors;
  db: Pool;
  logger: Logger;
}

/** How old an unqueued row must be to count as lost: a request normally queues its row within milliseconds. */
export const LOST_AFTER_MS = 2000;
/** How long a replica's claim on a lost row lasts: longer than a send can take (start-or-signal, 10 s per call). */
const CLAIM_MS = 60_000;
/** At most this many rows per check; the rest wait for the next one. */
const MAX_PER_CHECK = 100;

/** Sends the task to its agent's actor (starting the actor when none runs), then marks the row queued. */
export async function deliverAssignment(deps: AssignmentDeps, task: LostAssignment): Promise<void> {
  await deps.actors.assign(task.agent, task.id, task.priority);
  // Best effort: a row left unqueued is sent again by the check, which the actor ignores.
  await markAgentTaskQueued(deps.db, task.id).catch((err: Error) =>
    deps.logger.warn({ taskId: task.id, err: { message: err.message } }, 'could not mark the assignment queued; the check will send it again'),
  );
}

/**
 * Sends the lost assignments of `agents`, oldest first; returns how many. Stops at the first that cannot be sent
 * (Temporal unreachable, say), whose claim is released for the next check.
 */
export async function deliverLostAssignments(deps: AssignmentDeps, agents: readonly string[]): Promise<number> {
  let sent = 0;
  while (sent < MAX_PER_CHECK) {
    const task = await claimLostAssignment(deps.db, agents, LOST_AFTER_MS, CLAIM_MS);
    if (!task) break;
    try {
      await deliverAssignment(deps, task);
    } catch (err) {
      if (isAgentRemoved(err)) {
        // a newer roster removed the agent since the row was written (its own removal fails such rows too)
        await failUnqueuedAgentTask(deps.db, task.id, AGENT_REMOVED);
        continue;
      }
      await releaseAssignmentClaim(deps.db, task.id).catch(() => undefined);
      throw err;
    }
    deps.logger.warn({ agent: task.agent, taskId: task.id }, 'sent an assignment its request lost (the row was written, its signal never taken)');
    sent++;
  }
  return sent;
}
