/**
 * Agent profiles: how to run one coding-agent CLI (argv, how the prompt is passed, how a follow-up resumes the
 * session, which parser reads its output). The config file's `agents` map overrides and extends the built-ins.
 */
import type { ArmadaConfig } from '../config';

export interface AgentProfile {
  name: string;
  command: string[];
  /** argv of a follow-up run that resumes the agent's last session in the worktree; prompt on stdin */
  resumeCommand: string[];
  format: string;
  env: Record<string, string>;
  model: string | null;
  maxConcurrent: number | null;
  prices: { inputPerMTok: number; outputPerMTok: number } | null;
}

type BuiltIn = Omit<AgentProfile, 'name' | 'env' | 'maxConcurrent' | 'prices'> & { prices?: AgentProfile['prices']; env?: AgentProfile['env'] };

/**
 * `{NAME: "${NAME}"}` for each name: the child gets the server's variable of that name when it is set. Agents run
 * with an allow-listed environment (lib/process/childEnv.ts), so a built-in names the vendor keys its CLI reads.
 */
export function passServerEnv(...names: string[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [n, `\${${n}}`]));
}

/** Every built-in gets the prompt on stdin (and in ARMADA_PROMPT), never on the command line. */
export const BUILT_IN_PROFILES: Record<string, BuiltIn> = {
  'claude-code': {
    command: ['claude', '-p', '--output-format=stream-json', '--verbose'],
    resumeCommand: ['claude', '-p', '--output-format=stream-json', '--verbose', '--continue'],
    format: 'claude-stream-json',
    env: passServerEnv('ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'),
    model: null,
  },
  codex: {
    command: ['codex', 'exec', '--json'],
    resumeCommand: ['codex', 'exec', '--json', 'resume', '--last'],
    format: 'codex-json',
    env: passServerEnv('OPENAI_API_KEY', 'CODEX_API_KEY'),
    model: null,
  },
  gemini: {
    command: ['gemini', '--output-format', 'stream-json', '--yolo'],
    resumeCommand: ['gemini', '--output-format', 'stream-json', '--yolo', '--resume', 'latest'],
    format: 'gemini-stream-json',
    env: passServerEnv('GEMINI_API_KEY', 'GOOGLE_API_KEY'),
    model: null,
  },
  cursor: {
    command: ['cursor-agent', '-p', '--output-format', 'stream-json', '--force'],
    resumeCommand: ['cursor-agent', '-p', '--output-format', 'stream-json', '--force', '--resume'],
    format: 'claude-stream-json',
    env: passServerEnv('CURSOR_API_KEY'),
    model: null,
  },
  opencode: {
    command: ['opencode', 'run', '--format', 'json'],
    resumeCommand: ['opencode', 'run', '--format', 'json', '--continue'],
    format: 'opencode-json',
    env: passServerEnv('ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENCODE_API_KEY'),
    model: null,
  },
  amp: {
    command: ['amp', '-x', '--stream-json'],
    resumeCommand: ['amp', 'threads', 'continue', '-x', '--stream-json'],
    format: 'claude-stream-json',
    env: passServerEnv('AMP_API_KEY'),
    model: null,
  },
};

/** Names clients use for the built-ins besides their canonical one. */
const ALIASES: Record<string, string> = { claude: 'claude-code', 'claude-code-cli': 'claude-code', 'gemini-cli': 'gemini', 'cursor-agent': 'cursor', sourcegraph: 'amp' };

/** The profile for `llm`, or undefined when neither the config file nor the built-ins know it. */
export function resolveAgentProfile(config: ArmadaConfig, llm: string): AgentProfile | undefined {
  // own properties only: a name such as "toString" or "__proto__" must not resolve through Object.prototype
  const own = <T>(map: Record<string, T> | undefined, key: string): T | undefined => (map && Object.hasOwn(map, key) ? map[key] : undefined);
  const configured = own(config.file.agents, llm);
  if (configured) {
    return {
      name: llm,
      command: configured.command,
      resumeCommand: [...configured.command, ...(configured.resumeArgs ?? [])],
      format: configured.format ?? 'text',
      env: configured.env ?? {},
      model: configured.model ?? null,
      maxConcurrent: configured.maxConcurrent ?? null,
      prices: configured.prices ?? null,
    };
  }
  const builtIn = own(BUILT_IN_PROFILES, llm) ?? own(BUILT_IN_PROFILES, own(ALIASES, llm) ?? '');
  if (!builtIn) return undefined;
  return { name: llm, env: {}, maxConcurrent: null, prices: null, ...builtIn };
}

/** Every agent name a client may pass as `llm`. */
export function knownAgentNames(config: ArmadaConfig): string[] {
  return [...new Set([...Object.keys(config.file.agents ?? {}), ...Object.keys(BUILT_IN_PROFILES), ...Object.keys(ALIASES)])].sort();
}
