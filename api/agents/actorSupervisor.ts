/**
 * Keeps the agents' actors and their tasks' rows in step, in the background of the agents service.
 *
 * At service start (retried with backoff while Temporal or PostgreSQL is unreachable): every configured agent's actor
 * is started, after the tasks a closed predecessor left are failed, and its unfinished tasks are sent to it again (an
 * assignment lost between the row's insert and its signal; the actor ignores ids it already holds).
 *
 * Then every `actorCheckIntervalMs`: for each configured agent with unfinished tasks (one SQL query finds them; only
 * their actors are asked, one describe each), whether its actor was closed under them (terminated by hand, say): those
 * tasks are failed with how it ended. Such an actor is not started again here (an operator may have stopped it on
 * purpose); the next assignment, restart or service start starts it.
 */
import type { Pool } from 'pg';
import type { MultiAgent } from '../../lib/agents/agentRoster';
import { agentsWithUnfinishedTasks, unfinishedAgentTasks } from '../../lib/db/agentTasks';
import type { Logger } from '../../lib/logger';
import type { AgentActors } from './agentActors';

interface SupervisorDeps {
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

  const pending = new Set(names);
  const startUp = async (delay: number) => {
    for (const name of [...pending]) {
      if (stopped) return;
      try {
        await startActor(deps, name);
        pending.delete(name);
      } catch (err) {
        deps.logger.warn({ agent: name, err: { message: (err as Error).message } }, 'could not start agent actor; retrying');
      }
    }
    if (pending.size) later(() => startUp(Math.min(delay * 2, MAX_RETRY_MS)), delay);
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

/** Fails the tasks a closed actor left, starts the actor, and sends it the agent's unfinished tasks again. */
async function startActor(deps: SupervisorDeps, name: string): Promise<void> {
  await deps.actors.failOrphans(name);
  await deps.actors.ensure(name);
  for (const t of await unfinishedAgentTasks(deps.db, name)) await deps.actors.assign(name, t.id, t.priority);
}
