/** OpenCode `run --format json`: step_start, text, tool_use (part.tool, part.state), step_finish with tokens and cost, error. */
import { addCounts, count, entry, jsonLines, text, usd } from './common';
import type { OutputParser, ParsedLine } from './types';
import { recordOf } from '../../../lib/untrustedJson';

export function opencodeJsonParser(): OutputParser {
  let input = 0;
  let output = 0;
  let cost = 0;
  let answer: string | undefined;
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = text(obj.type);
    const part = recordOf(obj.part);
    const sessionId = typeof obj.sessionID === 'string' ? obj.sessionID : undefined;
    if (type === 'step_start') return { entries: [entry('debug', 'step started', 'agent', now, raw)], sessionId, progress: { stage: 'thinking' } };
    if (type === 'text') {
      answer = text(part.text);
      return { entries: [entry('info', answer, 'assistant', now, raw)], sessionId };
    }
    if (type === 'tool_use') {
      const state = recordOf(part.state);
      const inp = recordOf(state.input);
      const file = inp.filePath ?? inp.path;
      const tool = text(part.tool);
      const meta = { action: tool, ...(typeof file === 'string' ? { file } : {}) };
      return {
        entries: [entry(state.status === 'error' ? 'warn' : 'info', `${tool}${typeof file === 'string' ? ` ${file}` : state.title ? ` ${text(state.title)}` : ''}`, 'tool', now, raw, meta)],
        progress: { stage: 'tool', current: tool },
      };
    }
    if (type === 'step_finish') {
      const tokens = recordOf(part.tokens);
      input = addCounts(input, count(tokens.input), count(recordOf(tokens.cache).read));
      output = addCounts(output, count(tokens.output), count(tokens.reasoning));
      cost = Math.min(cost + (usd(part.cost) ?? 0), Number.MAX_VALUE);
      return { entries: [entry('debug', 'step finished', 'agent', now, raw, { tokens: part.tokens })], tokens: { input, output }, cost, summary: answer };
    }
    if (type === 'error') {
      const err = recordOf(obj.error);
      return { entries: [entry('error', text(recordOf(err.data).message) || text(err.name) || 'error', 'agent', now, raw)] };
    }
    return { entries: [entry('debug', type || 'event', 'agent', now, raw)] };
  });
}
