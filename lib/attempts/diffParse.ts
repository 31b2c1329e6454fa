/** Pure parsing of `git diff` output into the spec's Diff shape (json) and a side-by-side (split) view. */

/** The line lib/attempts/gitDiff.ts writes for a file whose changes are not shown (kept here: this module is pure). */
export const OMITTED_MARKER = 'Armada: changes not shown';

export interface DiffLine {
  type: 'add' | 'delete' | 'context';
  lineNumber: number;
  content: string;
  /** context lines: the line's number in the old file */
  oldLineNumber?: number;
}

export interface DiffFile {
  path: string;
  oldPath: string | null;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  binary: boolean;
  additions: number;
  deletions: number;
  changes: DiffLine[];
  /** set when the file has more changed lines than a diff shows: its counts are given, its lines are not */
  omitted?: true;
}

export interface Diff {
  files: DiffFile[];
  summary: { filesChanged: number; additions: number; deletions: number };
}

export interface SplitRow {
  left: { lineNumber: number; content: string; type: 'delete' | 'context' } | null;
  right: { lineNumber: number; content: string; type: 'add' | 'context' } | null;
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/**
 * A path as git writes it in a diff: as is, or C-quoted (`"…"` with \" \\ \t \n … and octal bytes such as \303\274 for
 * ü, core.quotePath) when it holds a quote, a backslash, a control or a non-ASCII character. The bytes are UTF-8.
 */
export function unquote(p: string): string {
  if (!(p.length >= 2 && p.startsWith('"') && p.endsWith('"'))) return p;
  return unquoteBytes(p).toString('utf8');
}

/** The bytes of a name as git writes it (see unquote): a name need not be UTF-8, and the file system takes bytes. */
export function unquoteBytes(p: string): Buffer {
  if (!(p.length >= 2 && p.startsWith('"') && p.endsWith('"'))) return Buffer.from(p);
  const bytes: number[] = [];
  for (let i = 1; i < p.length - 1; i++) {
    const c = p[i] as string;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c));
      continue;
    }
    const next = p[i + 1] ?? '';
    const octal = /^[0-7]{3}/.exec(p.slice(i + 1, i + 4));
    if (octal) {
      bytes.push(Number.parseInt(octal[0], 8));
      i += 3;
    } else {
      bytes.push(C_ESCAPES[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes);
}

/** A path C-quoted as git quotes it in a diff (see unquote), or as it is when it needs no quoting. */
export function cQuote(p: string): string {
  if (![...p].some((c) => c === '"' || c === '\\' || (c.codePointAt(0) as number) < 0x20 || (c.codePointAt(0) as number) >= 0x7f)) return p;
  const names: Record<number, string> = { 7: 'a', 8: 'b', 9: 't', 10: 'n', 11: 'v', 12: 'f', 13: 'r', 34: '"', 92: '\\' };
  let out = '';
  for (const b of Buffer.from(p)) out += names[b] !== undefined ? `\\${names[b]}` : b < 0x20 || b >= 0x7f ? `\\${b.toString(8).padStart(3, '0')}` : String.fromCharCode(b);
  return `"${out}"`;
}

/** A `--- a/…` / `+++ b/…` name without its prefix; git ends a name holding a space with a tab there. */
const stripPrefix = (p: string): string => unquote(p.replace(/\t$/, '')).replace(/^[ab]\//, '');

/** The two names of a `diff --git a/… b/…` line (quoted ones read; unquoted ones with spaces split in the middle). */
function gitHeaderNames(rest: string): [string, string] | undefined {
  const quoted = /^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$/.exec(rest);
  if (quoted) return [quoted[1] as string, quoted[2] as string];
  // `a/x y b/x y`: the same name twice (a rename's names come from its rename lines)
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half) && rest[half] === ' ' && rest.slice(2, half) === rest.slice(half + 3)) return [rest.slice(0, half), rest.slice(half + 1)];
  return undefined;
}

export function parseUnifiedDiff(text: string): Diff {
  const files: DiffFile[] = [];
  let file: DiffFile | undefined;
  let oldLine = 0;
  let newLine = 0;
  let inHunk = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const names = gitHeaderNames(line.slice(11));
      file = { path: names ? stripPrefix(names[1]) : line.slice(11), oldPath: null, status: 'modified', binary: false, additions: 0, deletions: 0, changes: [] };
      files.push(file);
      inHunk = false;
      continue;
    }
    if (!file) continue;
    if (!inHunk) {
      if (line.startsWith('new file mode')) file.status = 'added';
      else if (line.startsWith('deleted file mode')) file.status = 'deleted';
      else if (line.startsWith('rename from ')) {
        file.status = 'renamed';
        file.oldPath = unquote(line.slice(12));
      } else if (line.startsWith('rename to ')) file.path = unquote(line.slice(10));
      else if (line.startsWith('Binary files')) file.binary = true;
      else if (line.startsWith(`${OMITTED_MARKER}: `)) {
        // lib/attempts/gitDiff.ts: `<marker>: N lines added, M removed (…)`
        const m = /^(\d+) lines added, (\d+) removed/.exec(line.slice(OMITTED_MARKER.length + 2));
        file.omitted = true;
        file.additions = Number(m?.[1] ?? 0);
        file.deletions = Number(m?.[2] ?? 0);
      }
      else if (line.startsWith('+++ ') && line !== '+++ /dev/null') file.path = stripPrefix(line.slice(4));
    }
    const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (h) {
      oldLine = Number(h[1]);
      newLine = Number(h[2]);
      inHunk = true;
      continue;
    }
    if (!inHunk) continue;
    if (line.startsWith('+')) {
      file.additions++;
      file.changes.push({ type: 'add', lineNumber: newLine++, content: line.slice(1) });
    } else if (line.startsWith('-')) {
      file.deletions++;
      file.changes.push({ type: 'delete', lineNumber: oldLine++, content: line.slice(1) });
    } else if (line.startsWith(' ')) {
      file.changes.push({ type: 'context', lineNumber: newLine, content: line.slice(1), oldLineNumber: oldLine });
      oldLine++;
      newLine++;
    }
  }
  return {
    files,
    summary: { filesChanged: files.length, additions: files.reduce((s, f) => s + f.additions, 0), deletions: files.reduce((s, f) => s + f.deletions, 0) },
  };
}

/** Side by side: deletions pair with the additions that follow them; context lines appear on both sides. */
export function splitRows(f: DiffFile): SplitRow[] {
  const rows: SplitRow[] = [];
  let dels: DiffLine[] = [];
  let adds: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      const d = dels[i];
      const a = adds[i];
      rows.push({ left: d ? { lineNumber: d.lineNumber, content: d.content, type: 'delete' } : null, right: a ? { lineNumber: a.lineNumber, content: a.content, type: 'add' } : null });
    }
    dels = [];
    adds = [];
  };
  for (const c of f.changes) {
    if (c.type === 'delete') {
      if (adds.length) flush();
      dels.push(c);
    } else if (c.type === 'add') adds.push(c);
    else {
      flush();
      rows.push({ left: { lineNumber: c.oldLineNumber ?? c.lineNumber, content: c.content, type: 'context' }, right: { lineNumber: c.lineNumber, content: c.content, type: 'context' } });
    }
  }
  flush();
  return rows;
}
