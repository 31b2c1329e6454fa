/**
 * Codex `exec --json`: thread.started, turn.started, item.started / item.completed (agent_message, reasoning,
 * command_execution, file_change, mcp_tool_call…), turn.completed with usage, turn.failed and error.
 */
import { addCounts, count, entry, jsonLines, text } from './common';
import type { OutputParser, ParsedLine } from './types';
import { recordOf } from '../../../lib/untrustedJson';

export function codexJsonParser(): OutputParser {
  let input = 0;
  let output = 0;
  let lastMessage: string | undefined;
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = text(obj.type);
    if (type === 'thread.started') {
      const sessionId = typeof obj.thread_id === 'string' ? obj.thread_id : undefined;
      return { entries: [entry('debug', `thread started ${sessionId ?? ''}`.trim(), 'agent', now, raw, { sessionId })], sessionId, progress: { stage: 'starting' } };
    }
    if (type === 'turn.started') return { entries: [entry('debug', 'turn started', 'agent', now, raw)], progress: { stage: 'thinking' } };
    if (type === 'item.started' || type === 'item.updated') {
      const item = recordOf(obj.item);
      if (item.type === 'command_execution') return { entries: [], progress: { stage: 'tool', current: text(item.command) } };
      return { entries: [] };
    }
    if (type === 'item.completed') {
      const item = recordOf(obj.item);
      switch (item.type) {
        case 'agent_message':
          lastMessage = text(item.text);
          return { entries: [entry('info', lastMessage, 'assistant', now, raw)] };
        case 'reasoning':
          return { entries: [entry('debug', text(item.text), 'thinking', now, raw)] };
        case 'command_execution': {
          const exit = typeof item.exit_code === 'number' ? item.exit_code : null;
          return {
            entries: [entry(exit ? 'warn' : 'info', `$ ${text(item.command)} (exit ${exit ?? '?'})`, 'tool', now, raw, { action: 'command', command: item.command, exitCode: exit })],
          };
        }
        case 'file_change':
          return {
            entries: (Array.isArray(item.changes) ? item.changes.map(recordOf) : []).map((c) =>
              entry('info', `${text(c.kind)} ${text(c.path)}`, 'tool', now, raw, { action: text(c.kind), file: text(c.path) }),
            ),
          };
        case 'mcp_tool_call':
          return { entries: [entry('info', `${text(item.server)}.${text(item.tool)}`, 'tool', now, raw, { action: 'mcp', tool: item.tool })] };
        case 'error':
          return { entries: [entry('error', text(item.text) || 'error', 'agent', now, raw)] };
        default:
          return { entries: [entry('debug', text(item.text) || text(item.type) || 'item', 'agent', now, raw)] };
      }
    }
    if (type === 'turn.completed') {
      const u = recordOf(obj.usage);
      input = addCounts(input, count(u.input_tokens));
      output = addCounts(output, count(u.output_tokens));
      return {
        entries: [entry('debug', `turn completed (${count(u.input_tokens)} in, ${count(u.output_tokens)} out)`, 'agent', now, raw, { usage: u })],
        tokens: { input, output },
        summary: lastMessage,
        progress: { stage: 'finished', percentage: 100 },
      };
    }
    if (type === 'turn.failed' || type === 'error') {
      return { entries: [entry('error', text(recordOf(obj.error).message) || text(obj.message) || type, 'agent', now, raw)] };
    }
    return { entries: [entry('debug', type || 'event', 'agent', now, raw)] };
  });
}
