/**
 * Codex `exec --json`: thread.started, turn.started, item.started / item.completed (agent_message, reasoning,
 * command_execution, file_change, mcp_tool_call…), turn.completed with usage, turn.failed and error.
 */
import { entry, jsonLines } from './common';
import type { OutputParser, ParsedLine } from './types';

interface Item {
  type?: string;
  text?: string;
  command?: string;
  exit_code?: number | null;
  aggregated_output?: string;
  status?: string;
  changes?: { path: string; kind: string }[];
  tool?: string;
  server?: string;
}

export function codexJsonParser(): OutputParser {
  let input = 0;
  let output = 0;
  let lastMessage: string | undefined;
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = String(obj.type ?? '');
    if (type === 'thread.started') {
      const sessionId = typeof obj.thread_id === 'string' ? obj.thread_id : undefined;
      return { entries: [entry('debug', `thread started ${sessionId ?? ''}`.trim(), 'agent', now, raw, { sessionId })], sessionId, progress: { stage: 'starting' } };
    }
    if (type === 'turn.started') return { entries: [entry('debug', 'turn started', 'agent', now, raw)], progress: { stage: 'thinking' } };
    if (type === 'item.started' || type === 'item.updated') {
      const item = (obj.item ?? {}) as Item;
      if (item.type === 'command_execution') return { entries: [], progress: { stage: 'tool', current: item.command ?? '' } };
      return { entries: [] };
    }
    if (type === 'item.completed') {
      const item = (obj.item ?? {}) as Item;
      switch (item.type) {
        case 'agent_message':
          lastMessage = item.text ?? '';
          return { entries: [entry('info', lastMessage, 'assistant', now, raw)] };
        case 'reasoning':
          return { entries: [entry('debug', item.text ?? '', 'thinking', now, raw)] };
        case 'command_execution':
          return {
            entries: [entry(item.exit_code && item.exit_code !== 0 ? 'warn' : 'info', `$ ${item.command} (exit ${item.exit_code ?? '?'})`, 'tool', now, raw, { action: 'command', command: item.command, exitCode: item.exit_code })],
          };
        case 'file_change':
          return {
            entries: (item.changes ?? []).map((c) => entry('info', `${c.kind} ${c.path}`, 'tool', now, raw, { action: c.kind, file: c.path })),
          };
        case 'mcp_tool_call':
          return { entries: [entry('info', `${item.server}.${item.tool}`, 'tool', now, raw, { action: 'mcp', tool: item.tool })] };
        case 'error':
          return { entries: [entry('error', item.text ?? 'error', 'agent', now, raw)] };
        default:
          return { entries: [entry('debug', item.text ?? String(item.type ?? 'item'), 'agent', now, raw)] };
      }
    }
    if (type === 'turn.completed') {
      const u = (obj.usage ?? {}) as { input_tokens?: number; cached_input_tokens?: number; output_tokens?: number };
      input += u.input_tokens ?? 0;
      output += u.output_tokens ?? 0;
      return {
        entries: [entry('debug', `turn completed (${u.input_tokens ?? 0} in, ${u.output_tokens ?? 0} out)`, 'agent', now, raw, { usage: u })],
        tokens: { input, output },
        summary: lastMessage,
        progress: { stage: 'finished', percentage: 100 },
      };
    }
    if (type === 'turn.failed' || type === 'error') {
      const err = (obj.error ?? {}) as { message?: string };
      return { entries: [entry('error', err.message ?? String(obj.message ?? type), 'agent', now, raw)] };
    }
    return { entries: [entry('debug', type || 'event', 'agent', now, raw)] };
  });
}
