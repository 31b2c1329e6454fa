/** What a parser turns one output line into. */
import type { LogEntry, ProcessProgress } from '../../../lib/db/processes';

export interface ParsedLine {
  entries: LogEntry[];
  /** cumulative totals when the agent reported them on this line */
  tokens?: { input: number; output: number };
  /** cost in USD when the agent reported it */
  cost?: number;
  progress?: Partial<ProcessProgress>;
  sessionId?: string;
  /** the agent's final answer (becomes the attempt's output summary) */
  summary?: string;
}

export interface OutputParser {
  line(stream: 'stdout' | 'stderr', line: string, now?: Date): ParsedLine;
}
