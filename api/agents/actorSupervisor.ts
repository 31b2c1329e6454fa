/**
 * Keeps the agents' actors and their tasks' rows in step, in the background of the agents service.
 *
 * At service start (retried with backoff while Temporal or PostgreSQL is unreachable): the roster is published
 * (lib/db/agentRosters.ts; a new version when it differs from the one listed), the actors of agents no longer
 * configured are closed and their unfinished tasks failed (`agent removed from the configuration`); every configured
 * agent's actor is started, after the tasks a closed predecessor left are failed, unless a newer roster removed it.
 *
 * Then every `actorCheckIntervalMs`: for each configured agent with unfinished tasks (one SQL query finds them; only
 * their actors are asked, one describe each), whether its actor was closed under them (terminated by hand, say): those
 * tasks are failed with how it ended. Such an actor is not started again here (an operator may have stopped it on
 * purpose); the next assignment, restart or service start starts it. Then the assignments whose request lost their
 * signal (the API replica died between the row's insert and the signal) are sent (assignments.ts).
 */
import type { Pool } from 'pg';
import { AGENT_REMOVED } from '../../lib/agents/agentTaskErrors';
import type { MultiAgent } from '../../lib/agents/agentRoster';
import { publishRoster } from '../../lib/db/agentRosters';
import { agentsWithUnfinishedTasks, failTasksOfOtherAgents } from '../../lib/db/agentTasks';
import type { Logger } from '../../lib/logger';
import type { AgentActors } from './agentActors';
import { deliverLostAssignments } from './assignments';
import { isAgentRemoved } from './removedAgents';

export interface SupervisorDeps {
  actors: AgentActors;
  db: Pool;
  logger: Logger;
}

const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;

export function superviseActors(deps: SupervisorDeps, agents: readonly MultiAgent[], checkIntervalMs: number): { stop(): void } {
  const names = agents.map((a) => a.name);
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  const later = (fn: () => Promise<void>, ms: number) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      void fn();
    }, ms);
    timer.unref();
    timers.add(timer);
  };

  let removedClosed = false;
  const pending = new Set(names);
  const startUp = async (delay: number) => {
    if (!removedClosed) {
      try {
        await closeRemovedAgents(deps, names);
        removedClosed = true;
      } catch (err) {
        deps.logger.warn({ err: { message: (err as Error).message } }, 'could not close the actors of removed agents; retrying');
      }
    }
    for (const name of [...pending]) {
      if (stopped) return;
      try {
        await startActor(deps, name);
        pending.delete(name);
      } catch (err) {
        if (isAgentRemoved(err)) {
          pending.delete(name);
          deps.logger.warn({ agent: name }, `${(err as Error).message}: its actor is not started (this replica runs with an older roster)`);
        } else {
          deps.logger.warn({ agent: name, err: { message: (err as Error).message } }, 'could not start agent actor; retrying');
        }
      }
    }
    if (!removedClosed || pending.size) later(() => startUp(Math.min(delay * 2, MAX_RETRY_MS)), delay);
  };

  const check = async () => {
    try {
      for (const name of await agentsWithUnfinishedTasks(deps.db, names)) {
        if (stopped) return;
        await deps.actors.failOrphans(name).catch((err: Error) => deps.logger.debug({ agent: name, err: { message: err.message } }, 'agent actor check failed'));
      }
    } catch (err) {
      deps.logger.debug({ err: { message: (err as Error).message } }, 'agent actor check failed');
    }
    if (!stopped) {
      await deliverLostAssignments(deps, names).catch((err: Error) => deps.logger.warn({ err: { message: err.message } }, 'could not send the lost assignments; retrying at the next check'));
    }
    later(check, checkIntervalMs);
  };

  void startUp(FIRST_RETRY_MS);
  later(check, checkIntervalMs);
  return {
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}

/** Fails the tasks a closed actor left, then starts the actor (its lost assignments are sent by the check). */
async function startActor(deps: SupervisorDeps, name: string): Promise<void> {
  await deps.actors.failOrphans(name);
  await deps.actors.ensure(name);
}

/**
 * Agents removed from the configuration: the roster is published (those listed by an older one and not by this are
 * marked removed, for the replicas still running with the older one), their unfinished tasks are failed (first, so the
 * cancelled task's own record finds its row finished and leaves it), then their actors are closed: those this roster
 * version removed by id (an actor an older replica started just before the removal may not be visible yet), and the
 * running ones on this deployment's task queue.
 */
export async function closeRemovedAgents(deps: SupervisorDeps, configured: readonly string[]): Promise<void> {
  if (!closesRemovedAgents(configured)) {
    const running = await deps.actors.runningActors();
    if (running.length) {
      deps.logger.warn(
        { agents: running },
        'no agent is configured (multiAgent.agents is empty): the actors and tasks of the agents above are left as they are, since an empty roster is more likely a wrong ARMADA_CONFIG than every agent removed; to close them, configure at least one agent, or cancel their agent:<name> workflows',
      );
    }
    return;
  }
  const roster = await publishRoster(deps.db, configured);
  deps.logger.info({ rosterVersion: roster.version, removed: roster.removed }, 'agents roster published');
  const failed = await failTasksOfOtherAgents(deps.db, configured, AGENT_REMOVED);
  if (failed.length) deps.logger.warn({ tasks: failed }, 'failed the unfinished tasks of agents removed from the configuration');
  for (const name of new Set([...roster.removed, ...(await deps.actors.runningActors())])) {
    if (configured.includes(name)) continue;
    if (await deps.actors.close(name)) deps.logger.info({ agent: name }, 'closed the actor of an agent removed from the configuration');
  }
}

/**
 * Whether agents missing from the roster are closed: not when the roster is empty, which is far more often a config
 * file that was not found or read (a wrong ARMADA_CONFIG) than every agent removed on purpose, and would fail every
 * unfinished task.
 */
export const closesRemovedAgents = (configured: readonly string[]): boolean => configured.length > 0;
