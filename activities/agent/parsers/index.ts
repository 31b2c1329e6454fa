/** Output parsers by profile `format` (lib/agents/outputFormats.ts; the config file refuses others). */
import type { OutputParser } from './types';
import { textParser } from './common';
import { claudeStreamJsonParser } from './claudeStreamJson';
import { codexJsonParser } from './codexJson';
import { geminiStreamJsonParser } from './geminiStreamJson';
import { opencodeJsonParser } from './opencodeJson';

export type { OutputParser, ParsedLine } from './types';
export { entry, jsonLines, jsonObject, textParser } from './common';
export { createFinalMessage, lastBytes, type FinalMessage } from './finalMessage';

export function createParser(format: string): OutputParser {
  switch (format) {
    case 'claude-stream-json':
    case 'stream-json':
      return claudeStreamJsonParser();
    case 'codex-json':
      return codexJsonParser();
    case 'gemini-stream-json':
      return geminiStreamJsonParser();
    case 'opencode-json':
      return opencodeJsonParser();
    default:
      return textParser();
  }
}
