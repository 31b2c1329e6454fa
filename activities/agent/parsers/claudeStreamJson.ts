/**
 * Claude Code `-p --output-format=stream-json --verbose` (also Cursor's and Amp's stream-json, same shape):
 * system/init, assistant messages with text and tool_use blocks and per-message usage, user tool results, and a
 * final `result` with the answer, total usage and total_cost_usd.
 */
import type { LogEntry } from '../../../lib/db/processes';
import { entry, jsonLines } from './common';
import type { OutputParser, ParsedLine } from './types';

interface Block {
  type?: string;
  text?: string;
  name?: string;
  input?: Record<string, unknown>;
  content?: unknown;
  is_error?: boolean;
}
interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

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
      out.push(entry('debug', `session ${obj.subtype ?? 'event'}${obj.model ? ` (model ${obj.model})` : ''}`, 'agent', now, raw, { sessionId, model: obj.model }));
      return { entries: out, sessionId, progress: { stage: 'starting' } };
    }
    if (type === 'assistant' || type === 'user') {
      const message = (obj.message ?? {}) as { content?: Block[] | string; usage?: Usage };
      const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content ?? []);
      let progress: ParsedLine['progress'];
      for (const b of blocks) {
        if (b.type === 'text' && b.text) out.push(entry('info', b.text, type === 'assistant' ? 'assistant' : 'user', now, raw));
        else if (b.type === 'thinking') out.push(entry('debug', String((b as { thinking?: string }).thinking ?? ''), 'thinking', now, raw));
        else if (b.type === 'tool_use') {
          const meta = toolMetadata(b.name ?? 'tool', b.input);
          out.push(entry('info', `${b.name}${meta.file ? ` ${meta.file}` : meta.command ? ` ${meta.command}` : ''}`, 'tool', now, raw, meta));
          progress = { stage: 'tool', current: String(b.name ?? '') };
        } else if (b.type === 'tool_result') {
          const text = typeof b.content === 'string' ? b.content : Array.isArray(b.content) ? (b.content as Block[]).map((c) => c.text ?? '').join('\n') : '';
          out.push(entry(b.is_error ? 'warn' : 'debug', text.slice(0, 4000), 'tool_result', now, raw));
        }
      }
      const u = message.usage;
      if (type === 'assistant' && u) {
        input += (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
        output += u.output_tokens ?? 0;
        return { entries: out, tokens: { input, output }, progress };
      }
      return { entries: out, progress };
    }
    if (type === 'result') {
      const u = (obj.usage ?? {}) as Usage;
      const totalIn = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
      const failed = obj.is_error === true || (typeof obj.subtype === 'string' && obj.subtype !== 'success');
      const summary = typeof obj.result === 'string' ? obj.result : undefined;
      out.push(entry(failed ? 'error' : 'info', summary ?? `result: ${obj.subtype}`, 'result', now, raw, { turns: obj.num_turns, durationMs: obj.duration_ms }));
      return {
        entries: out,
        tokens: totalIn || u.output_tokens ? { input: Math.max(totalIn, input), output: Math.max(u.output_tokens ?? 0, output) } : undefined,
        cost: typeof obj.total_cost_usd === 'number' ? obj.total_cost_usd : undefined,
        summary,
        progress: { stage: 'finished', percentage: 100 },
      };
    }
    return { entries: [entry('debug', String(type ?? 'event'), 'agent', now, raw)] };
  });
}
