/**
 * The agent's final answer, read from its stdout lines by profile `format` (the text a user would read, not the JSON
 * events around it). Fed one line at a time; it holds the current candidate answer only, never the whole output.
 *
 * - claude-stream-json (and `stream-json`): the `result` event's `result`; without one (or when it is empty), the
 *   text of the last assistant message of the main agent (subagent messages, with a `parent_tool_use_id`, are skipped).
 * - codex-json: the text of the last completed `agent_message` item.
 * - gemini-stream-json: the last assistant message: its deltas joined, from the last tool use / tool result / user
 *   message on (a message without `delta` replaces it).
 * - opencode-json: the last `text` part.
 * - text and unknown formats: none (the caller keeps the plain stdout).
 */
import { jsonObject } from './common';

export interface FinalMessage {
  line(line: string): void;
  /** the final answer with surrounding whitespace trimmed (its last `maxBytes` when longer); undefined when there is none */
  text(): string | undefined;
}

/** What one format does with each JSON object on stdout, and the answer it has so far. */
interface Extractor {
  event(obj: Record<string, unknown>): void;
  answer(): string | undefined;
}

/** The last `max` bytes of `text` (UTF-8), without a partial character at the start. */
export function lastBytes(text: string, max: number): string {
  const buf = Buffer.from(text);
  return buf.length > max ? buf.subarray(buf.length - max).toString('utf8').replace(/^\uFFFD+/, '') : text;
}

/** The text blocks of a Claude message (`content` is a string or a list of blocks), joined by newlines. */
function claudeText(message: unknown): string {
  const content = (message as { content?: unknown } | undefined)?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b): b is { type: 'text'; text: string } => b?.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('\n');
}

function claude(): Extractor {
  let result: string | undefined;
  let lastText: string | undefined;
  return {
    event(obj) {
      if (obj.type === 'result' && typeof obj.result === 'string' && obj.result.trim()) result = obj.result;
      else if (obj.type === 'assistant' && !obj.parent_tool_use_id) {
        const text = claudeText(obj.message);
        if (text.trim()) lastText = text;
      }
    },
    answer: () => result ?? lastText,
  };
}

function codex(): Extractor {
  let last: string | undefined;
  return {
    event(obj) {
      const item = obj.item as { type?: unknown; text?: unknown } | undefined;
      if (obj.type === 'item.completed' && item?.type === 'agent_message' && typeof item.text === 'string') last = item.text;
    },
    answer: () => last,
  };
}

/** Deltas of one message are joined; the joined text is cut to its last `maxBytes`-or-more characters as it grows. */
function gemini(maxBytes: number): Extractor {
  let message = '';
  let open = false; // the last event was an assistant delta: the next delta continues the same message
  return {
    event(obj) {
      if (obj.type === 'message' && obj.role === 'assistant') {
        const content = typeof obj.content === 'string' ? obj.content : '';
        const delta = obj.delta === true;
        message = delta && open ? message + content : content;
        if (message.length > 2 * maxBytes) message = message.slice(-maxBytes); // ≥ maxBytes bytes kept: text() cuts exactly
        open = delta;
      } else if (obj.type === 'tool_use' || obj.type === 'tool_result' || obj.type === 'message') open = false;
    },
    answer: () => message || undefined,
  };
}

function opencode(): Extractor {
  let last: string | undefined;
  return {
    event(obj) {
      const part = obj.part as { text?: unknown } | undefined;
      if (obj.type === 'text' && typeof part?.text === 'string') last = part.text;
    },
    answer: () => last,
  };
}

function extractor(format: string, maxBytes: number): Extractor | undefined {
  switch (format) {
    case 'claude-stream-json':
    case 'stream-json':
      return claude();
    case 'codex-json':
      return codex();
    case 'gemini-stream-json':
      return gemini(maxBytes);
    case 'opencode-json':
      return opencode();
    default:
      return undefined;
  }
}

/** A final-message reader for `format` (the same names as createParser); lines that are not JSON objects are ignored. */
export function createFinalMessage(format: string, maxBytes: number): FinalMessage {
  const x = extractor(format, maxBytes);
  return {
    line(line) {
      const obj = x && jsonObject(line);
      if (obj) x.event(obj);
    },
    text() {
      const answer = x?.answer()?.trim();
      return answer ? lastBytes(answer, maxBytes) : undefined;
    },
  };
}
