/**
 * The names an agent profile's `format` may take: which parser reads the agent's output
 * (activities/agent/parsers). `stream-json` is another name for `claude-stream-json`.
 */
export const AGENT_OUTPUT_FORMATS = ['text', 'claude-stream-json', 'stream-json', 'codex-json', 'gemini-stream-json', 'opencode-json'] as const;

export type AgentOutputFormat = (typeof AGENT_OUTPUT_FORMATS)[number];
