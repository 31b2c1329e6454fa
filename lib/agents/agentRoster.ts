/** The configured multi-agent roster (`multiAgent.agents` of the config file), checked once at startup. */
import { ConfigError, type ArmadaConfig } from '../config';
import { knownAgentCommands, resolveAgentCommand } from './agentCommand';

export interface MultiAgent {
  name: string;
  role: string;
  llm: string;
  memory: boolean;
  tools: string[];
}

export const DEFAULT_CONTINUE_AS_NEW_EVERY = 100;
export const DEFAULT_TASK_TIMEOUT_MS = 30 * 60_000;
export const DEFAULT_MEMORY_HITS = 3;
export const DEFAULT_ACTOR_CHECK_INTERVAL_MS = 3000;

/** Every configured agent; throws ConfigError for a duplicate name, `.` or `..`, or an `llm` that names no agent profile. */
export function multiAgents(config: ArmadaConfig): MultiAgent[] {
  const seen = new Set<string>();
  return (config.file.multiAgent?.agents ?? []).map((a, i) => {
    // the scratch directory is agents/<name>/: `.` and `..` would put it in agents/ itself or in ARMADA_HOME
    if (a.name === '.' || a.name === '..') {
      throw new ConfigError(`${config.configPath}: multiAgent.agents.${i}.name: "${a.name}" is not an agent name: it names a directory, not one of its own under agents/`);
    }
    if (seen.has(a.name)) throw new ConfigError(`${config.configPath}: multiAgent.agents.${i}.name: agent "${a.name}" is defined twice`);
    seen.add(a.name);
    if (!resolveAgentCommand(config, a.llm)) {
      const known = knownAgentCommands(config);
      throw new ConfigError(
        `${config.configPath}: multiAgent.agents.${i}.llm: "${a.llm}" (agent "${a.name}") is not an agent profile; ` +
          (known.length ? `define it under "agents" or use one of: ${known.join(', ')}` : 'define it under "agents"'),
      );
    }
    return { name: a.name, role: a.role ?? '', llm: a.llm, memory: a.memory ?? false, tools: a.tools ?? [] };
  });
}

export function findMultiAgent(config: ArmadaConfig, name: string): MultiAgent | undefined {
  return multiAgents(config).find((a) => a.name === name);
}

export interface MultiAgentSettings {
  continueAsNewEvery: number;
  taskTimeoutMs: number;
  memoryHits: number;
  actorCheckIntervalMs: number;
}

export function multiAgentSettings(config: ArmadaConfig): MultiAgentSettings {
  const m = config.file.multiAgent;
  return {
    continueAsNewEvery: m?.continueAsNewEvery ?? DEFAULT_CONTINUE_AS_NEW_EVERY,
    taskTimeoutMs: m?.taskTimeoutMs ?? DEFAULT_TASK_TIMEOUT_MS,
    memoryHits: m?.memoryHits ?? DEFAULT_MEMORY_HITS,
    actorCheckIntervalMs: m?.actorCheckIntervalMs ?? DEFAULT_ACTOR_CHECK_INTERVAL_MS,
  };
}
