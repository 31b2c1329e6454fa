/**
 * Claude Code `-p --output-format=stream-json --verbose` (also Cursor's and Amp's stream-json, same shape):
 * system/init, assistant messages with text and tool_use blocks and per-message usage, user tool results, and a
 * final `result` with the answer, total usage and total_cost_usd.
 */
import type { LogEntry } from '../../../lib/db/processes';
import { addCounts, count, entry, jsonLines, text, usd } from './common';
import type { OutputParser, ParsedLine } from './types';
import { recordOf } from '../../../lib/untrustedJson';

function toolMetadata(name: string, input: Record<string, unknown> = {}): Record<string, unknown> {
  const file = input.file_path ?? input.path ?? input.notebook_path;
  return { action: name, ...(typeof file === 'string' ? { file } : {}), ...(typeof input.command === 'string' ? { command: input.command } : {}) };
}

export function claudeStreamJsonParser(): OutputParser {
  let input = 0;
  let output = 0;
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = obj.type;
    const out: LogEntry[] = [];
    if (type === 'system') {
      const sessionId = typeof obj.session_id === 'string' ? obj.session_id : undefined;
      out.push(entry('debug', `session ${text(obj.subtype) || 'event'}${obj.model ? ` (model ${text(obj.model)})` : ''}`, 'agent', now, raw, { sessionId, model: obj.model }));
      return { entries: out, sessionId, progress: { stage: 'starting' } };
    }
    if (type === 'assistant' || type === 'user') {
      const message = recordOf(obj.message);
      const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? message.content.map(recordOf) : [];
      let progress: ParsedLine['progress'];
      for (const b of blocks) {
        if (b.type === 'text' && b.text) out.push(entry('info', text(b.text), type === 'assistant' ? 'assistant' : 'user', now, raw));
        else if (b.type === 'thinking') out.push(entry('debug', text(b.thinking), 'thinking', now, raw));
        else if (b.type === 'tool_use') {
          const name = text(b.name) || 'tool';
          const meta = toolMetadata(name, recordOf(b.input));
          out.push(entry('info', `${name}${meta.file ? ` ${meta.file}` : meta.command ? ` ${meta.command}` : ''}`, 'tool', now, raw, meta));
          progress = { stage: 'tool', current: name };
        } else if (b.type === 'tool_result') {
          const result = typeof b.content === 'string' ? b.content : Array.isArray(b.content) ? b.content.map((c) => text(recordOf(c).text)).join('\n') : '';
          out.push(entry(b.is_error ? 'warn' : 'debug', result.slice(0, 4000), 'tool_result', now, raw));
        }
      }
      if (type === 'assistant' && message.usage) {
        const u = recordOf(message.usage);
        input = addCounts(input, count(u.input_tokens), count(u.cache_creation_input_tokens), count(u.cache_read_input_tokens));
        output = addCounts(output, count(u.output_tokens));
        return { entries: out, tokens: { input, output }, progress };
      }
      return { entries: out, progress };
    }
    if (type === 'result') {
      const u = recordOf(obj.usage);
      const totalIn = addCounts(count(u.input_tokens), count(u.cache_creation_input_tokens), count(u.cache_read_input_tokens));
      const totalOut = count(u.output_tokens);
      const failed = obj.is_error === true || (typeof obj.subtype === 'string' && obj.subtype !== 'success');
      const summary = typeof obj.result === 'string' ? obj.result : undefined;
      out.push(entry(failed ? 'error' : 'info', summary ?? `result: ${text(obj.subtype) || (failed ? 'error' : 'done')}`, 'result', now, raw, { turns: obj.num_turns, durationMs: obj.duration_ms }));
      return {
        entries: out,
        tokens: totalIn || totalOut ? { input: Math.max(totalIn, input), output: Math.max(totalOut, output) } : undefined,
        cost: usd(obj.total_cost_usd),
        summary,
        progress: { stage: 'finished', percentage: 100 },
      };
    }
    return { entries: [entry('debug', text(type) || 'event', 'agent', now, raw)] };
  });
}
