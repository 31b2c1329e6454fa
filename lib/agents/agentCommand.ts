/**
 * The command behind a multi-agent `llm` name: the shared agent profiles (the config file's `agents` plus the
 * built-in coding-agent CLIs, lib/agents/profiles.ts), the same ones attempts use.
 */
import type { ArmadaConfig } from '../config';
import { knownAgentNames, resolveAgentProfile } from './profiles';

export interface AgentCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  format: string;
  model?: string;
}

/** The profile named `llm`, or undefined when neither the config file nor the built-ins have it. */
export function resolveAgentCommand(config: ArmadaConfig, llm: string): AgentCommand | undefined {
  const profile = resolveAgentProfile(config, llm);
  if (!profile) return undefined;
  const [command, ...args] = profile.command;
  if (!command) return undefined;
  return { command, args, env: profile.env, format: profile.format, model: profile.model ?? undefined };
}

/** Profile names that resolve, for error messages. */
export function knownAgentCommands(config: ArmadaConfig): string[] {
  return knownAgentNames(config);
}
