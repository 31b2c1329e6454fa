/**
 * The body of a live diff event, built once per change and shared by every viewer: the diff parsed into the json
 * format's files, serialised, and its hash (the event id, so a viewer resuming with it gets nothing until the diff
 * changes). CPU-heavy for large diffs: the task service runs it on its warm piscina pool (cpuPool.ts).
 */
import crypto from 'node:crypto';
import { parseUnifiedDiff, type Diff } from './diffParse';

export interface DiffEventBody {
  /** first 16 hex digits of sha1(filesJson) */
  hash: string;
  /** JSON of the files in the json format of GET /api/attempts/:id/diff */
  filesJson: string;
  summary: Diff['summary'];
}

export function diffEventBody(text: string): DiffEventBody {
  const parsed = parseUnifiedDiff(text);
  const files = parsed.files.map((f) => ({ ...f, changes: f.changes.map((c) => ({ type: c.type, lineNumber: c.lineNumber, content: c.content })) }));
  const filesJson = JSON.stringify(files);
  return { hash: crypto.createHash('sha1').update(filesJson).digest('hex').slice(0, 16), filesJson, summary: parsed.summary };
}
