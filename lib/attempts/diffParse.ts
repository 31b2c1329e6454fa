/** Pure parsing of `git diff` output into the spec's Diff shape (json) and a side-by-side (split) view. */

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
}

export interface Diff {
  files: DiffFile[];
  summary: { filesChanged: number; additions: number; deletions: number };
}

export interface SplitRow {
  left: { lineNumber: number; content: string; type: 'delete' | 'context' } | null;
  right: { lineNumber: number; content: string; type: 'add' | 'context' } | null;
}

const unquote = (p: string): string => (p.startsWith('"') && p.endsWith('"') ? JSON.parse(p) : p);
const stripPrefix = (p: string): string => unquote(p).replace(/^[ab]\//, '');

export function parseUnifiedDiff(text: string): Diff {
  const files: DiffFile[] = [];
  let file: DiffFile | undefined;
  let oldLine = 0;
  let newLine = 0;
  let inHunk = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const m = /^diff --git (\S+|"[^"]+") (\S+|"[^"]+")$/.exec(line);
      file = { path: m ? stripPrefix(m[2] as string) : line.slice(11), oldPath: null, status: 'modified', binary: false, additions: 0, deletions: 0, changes: [] };
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
