/** What every multi-agent plugin receives as its options. */
import type { MultiAgent } from '../../lib/agents/agentRoster';
import type { DetailServiceDeps } from '../detailServiceDeps';
import type { AgentActors } from './agentActors';

export interface AgentsAppDeps extends DetailServiceDeps {
  /** The configured roster, validated at startup. */
  agents: readonly MultiAgent[];
  actors: AgentActors;
}

export interface AgentsPluginOptions {
  deps: AgentsAppDeps;
}
