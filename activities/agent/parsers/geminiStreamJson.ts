/** Gemini CLI `--output-format stream-json`: init, message (role, content, delta), tool_use, tool_result, error, result with stats. */
import { count, entry, jsonLines, text } from './common';
import type { OutputParser, ParsedLine } from './types';
import { recordOf } from '../../../lib/untrustedJson';

export function geminiStreamJsonParser(): OutputParser {
  let pending = '';
  let answer = '';
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = text(obj.type);
    if (type === 'init') {
      const sessionId = typeof obj.session_id === 'string' ? obj.session_id : undefined;
      return { entries: [entry('debug', `session started${obj.model ? ` (model ${text(obj.model)})` : ''}`, 'agent', now, raw, { sessionId })], sessionId, progress: { stage: 'starting' } };
    }
    if (type === 'message') {
      if (obj.role !== 'assistant') return { entries: [] };
      const content = text(obj.content);
      if (obj.delta === true) {
        pending += content;
        answer += content;
        // deltas are joined into one entry per line of text
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        return { entries: lines.filter(Boolean).map((l) => entry('info', l, 'assistant', now, raw)) };
      }
      answer = content;
      return { entries: [entry('info', content, 'assistant', now, raw)] };
    }
    const flush = () => {
      const e = pending ? [entry('info', pending, 'assistant', now, raw)] : [];
      pending = '';
      return e;
    };
    if (type === 'tool_use') {
      const params = recordOf(obj.parameters);
      const file = params.file_path ?? params.absolute_path ?? params.path;
      const tool = text(obj.tool_name);
      return {
        entries: [...flush(), entry('info', `${tool}${typeof file === 'string' ? ` ${file}` : ''}`, 'tool', now, raw, { action: tool, ...(typeof file === 'string' ? { file } : {}) })],
        progress: { stage: 'tool', current: tool },
      };
    }
    if (type === 'tool_result') return { entries: [entry(obj.status === 'error' ? 'warn' : 'debug', `${text(obj.tool_id) || 'tool'} ${text(obj.status)}`.trim(), 'tool_result', now, raw)] };
    if (type === 'error') return { entries: [...flush(), entry('error', text(obj.message) || 'error', 'agent', now, raw)] };
    if (type === 'result') {
      const stats = recordOf(obj.stats);
      const failed = obj.status !== undefined && obj.status !== 'success';
      return {
        entries: [...flush(), entry(failed ? 'error' : 'info', `result: ${text(obj.status) || 'done'}`, 'result', now, raw, { stats })],
        tokens: { input: count(stats.input_tokens), output: count(stats.output_tokens) },
        summary: answer || undefined,
        progress: { stage: 'finished', percentage: 100 },
      };
    }
    return { entries: [entry('debug', type || 'event', 'agent', now, raw)] };
  });
}
