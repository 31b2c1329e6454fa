/**
 * The command behind a multi-agent `llm` name. Only the config file's `agents` profiles are resolved here; this is
 * the one place to point at the shared profile library (built-in CLIs) once it exists.
 */
import type { ArmadaConfig } from '../../lib/config';

export interface AgentCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  format: string;
  model?: string;
}

/** The profile named `llm`, or undefined when the config file has none by that name. */
export function resolveAgentCommand(config: ArmadaConfig, llm: string): AgentCommand | undefined {
  const profile = Object.hasOwn(config.file.agents ?? {}, llm) ? config.file.agents?.[llm] : undefined;
  if (!profile) return undefined;
  const [command, ...args] = profile.command;
  if (!command) return undefined;
  return { command, args, env: profile.env ?? {}, format: profile.format ?? 'text', model: profile.model };
}

/** Profile names that resolve, for error messages. */
export function knownAgentCommands(config: ArmadaConfig): string[] {
  return Object.keys(config.file.agents ?? {}).sort();
}
