/** OpenCode `run --format json`: step_start, text, tool_use (part.tool, part.state), step_finish with tokens and cost, error. */
import { entry, jsonLines } from './common';
import type { OutputParser, ParsedLine } from './types';

interface Part {
  text?: string;
  tool?: string;
  state?: { status?: string; input?: Record<string, unknown>; title?: string };
  tokens?: { input?: number; output?: number; reasoning?: number; cache?: { read?: number; write?: number } };
  cost?: number;
}

export function opencodeJsonParser(): OutputParser {
  let input = 0;
  let output = 0;
  let cost = 0;
  let answer: string | undefined;
  return jsonLines((obj, raw, now): ParsedLine => {
    const type = String(obj.type ?? '');
    const part = (obj.part ?? {}) as Part;
    const sessionId = typeof obj.sessionID === 'string' ? obj.sessionID : undefined;
    if (type === 'step_start') return { entries: [entry('debug', 'step started', 'agent', now, raw)], sessionId, progress: { stage: 'thinking' } };
    if (type === 'text') {
      answer = part.text ?? '';
      return { entries: [entry('info', answer, 'assistant', now, raw)], sessionId };
    }
    if (type === 'tool_use') {
      const inp = part.state?.input ?? {};
      const file = inp.filePath ?? inp.path;
      const meta = { action: part.tool, ...(typeof file === 'string' ? { file } : {}) };
      return {
        entries: [entry(part.state?.status === 'error' ? 'warn' : 'info', `${part.tool}${typeof file === 'string' ? ` ${file}` : part.state?.title ? ` ${part.state.title}` : ''}`, 'tool', now, raw, meta)],
        progress: { stage: 'tool', current: String(part.tool ?? '') },
      };
    }
    if (type === 'step_finish') {
      input += (part.tokens?.input ?? 0) + (part.tokens?.cache?.read ?? 0);
      output += (part.tokens?.output ?? 0) + (part.tokens?.reasoning ?? 0);
      cost += part.cost ?? 0;
      return { entries: [entry('debug', 'step finished', 'agent', now, raw, { tokens: part.tokens })], tokens: { input, output }, cost, summary: answer };
    }
    if (type === 'error') {
      const err = (obj.error ?? {}) as { name?: string; data?: { message?: string } };
      return { entries: [entry('error', err.data?.message ?? err.name ?? 'error', 'agent', now, raw)] };
    }
    return { entries: [entry('debug', type || 'event', 'agent', now, raw)] };
  });
}
