/**
 * Agents a newer roster removed. Replicas of the agents service may run with different rosters for a while (a rolling
 * update of the config): the roster a replica started with last is the one that counts (lib/db/agentRosters.ts). An
 * agent it removed is removed on every replica, also on one still running with an older roster that lists it: 404
 * for it, and its actor is never started again, until a later roster lists it again.
 */
import type { Pool, PoolClient } from 'pg';
import { agentRemovedIn, removedAgents } from '../../lib/db/agentRosters';
import { withTransaction } from '../../lib/db/pool';
import { type AppError, isAppError, notFound } from '../../lib/errors';
import type { MultiAgent } from '../../lib/agents/agentRoster';

const AGENT_REMOVED_CODE = 'AGENT_REMOVED';

export const agentRemoved = (name: string, version: number): AppError =>
  notFound(`Agent '${name}' was removed from the configuration (roster version ${version})`, AGENT_REMOVED_CODE);

export const isAgentRemoved = (err: unknown): boolean => isAppError(err) && err.code === AGENT_REMOVED_CODE;

/**
 * The configured agent `name`, unless a newer roster removed it (404 either way). PostgreSQL not answering is taken
 * as "not removed": nothing here starts an actor, and what does (`whileListed`) asks PostgreSQL itself.
 */
export async function requireServedAgent(deps: { agents: readonly MultiAgent[]; db: Pool }, name: string): Promise<MultiAgent> {
  const removedIn = await agentRemovedIn(deps.db, name).catch(() => undefined);
  if (removedIn !== undefined) throw agentRemoved(name, removedIn);
  const agent = deps.agents.find((a) => a.name === name);
  if (!agent) throw notFound(`Agent '${name}' not found`);
  return agent;
}

/** The configured agents no roster removed (all of them when PostgreSQL does not answer). */
export async function servedAgents(deps: { agents: readonly MultiAgent[]; db: Pool }): Promise<readonly MultiAgent[]> {
  const removed = await removedAgents(
    deps.db,
    deps.agents.map((a) => a.name),
  ).catch(() => new Map<string, number>());
  return deps.agents.filter((a) => !removed.has(a.name));
}

/**
 * Runs `fn` for the agent unless a roster removed it (then rejects with a 404), holding the agent's roster row so that
 * a newer roster removes it only after `fn` is done: an actor started or a task written here is then closed or failed
 * by that removal, never left behind it.
 */
export function whileListed<T>(db: Pool, agent: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(db, async (c) => {
    const removedIn = await agentRemovedIn(c, agent, { lock: true });
    if (removedIn !== undefined) throw agentRemoved(agent, removedIn);
    return fn(c);
  });
}
