/** Gemini CLI `--output-format stream-json`: init, message (role, content, delta), tool_use, tool_result, error, result with stats. */
import { entry, jsonLines } from './common';
import type { OutputParser, ParsedLine } from './types';

export function geminiStreamJsonParser(): OutputParser {
  let pending = '';
  let answer = '';
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = String(obj.type ?? '');
    if (type === 'init') {
      const sessionId = typeof obj.session_id === 'string' ? obj.session_id : undefined;
      return { entries: [entry('debug', `session started${obj.model ? ` (model ${obj.model})` : ''}`, 'agent', now, raw, { sessionId })], sessionId, progress: { stage: 'starting' } };
    }
    if (type === 'message') {
      if (obj.role !== 'assistant') return { entries: [] };
      const content = String(obj.content ?? '');
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
      const params = (obj.parameters ?? {}) as Record<string, unknown>;
      const file = params.file_path ?? params.absolute_path ?? params.path;
      return {
        entries: [...flush(), entry('info', `${obj.tool_name}${typeof file === 'string' ? ` ${file}` : ''}`, 'tool', now, raw, { action: obj.tool_name, ...(typeof file === 'string' ? { file } : {}) })],
        progress: { stage: 'tool', current: String(obj.tool_name ?? '') },
      };
    }
    if (type === 'tool_result') return { entries: [entry(obj.status === 'error' ? 'warn' : 'debug', `${obj.tool_id ?? 'tool'} ${obj.status ?? ''}`.trim(), 'tool_result', now, raw)] };
    if (type === 'error') return { entries: [...flush(), entry('error', String(obj.message ?? 'error'), 'agent', now, raw)] };
    if (type === 'result') {
      const stats = (obj.stats ?? {}) as { input_tokens?: number; output_tokens?: number };
      const failed = obj.status !== undefined && obj.status !== 'success';
      return {
        entries: [...flush(), entry(failed ? 'error' : 'info', `result: ${obj.status ?? 'done'}`, 'result', now, raw, { stats })],
        tokens: { input: stats.input_tokens ?? 0, output: stats.output_tokens ?? 0 },
        summary: answer || undefined,
        progress: { stage: 'finished', percentage: 100 },
      };
    }
    return { entries: [entry('debug', type || 'event', 'agent', now, raw)] };
  });
}
