/**
 * `git diff --raw --numstat -z` read into one record per changed file: its status, its path (and a rename's old
 * path) exactly as on disk — with -z git writes names unquoted, so spaces, tabs, quotes and non-ASCII letters come
 * through — and its changed lines (a binary file counts 0).
 */
export interface ChangedFile {
  path: string;
  oldPath?: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  added: number;
  removed: number;
}

export function parseRawNumstatZ(out: string): ChangedFile[] {
  const t = out.split('\0');
  const files: ChangedFile[] = [];
  let i = 0;
  // first the raw records (":meta\0path\0", renames and copies ":meta\0old\0new\0"), then one numstat record per file
  while (i < t.length && t[i]?.startsWith(':')) {
    const st = (t[i] as string).split(' ').at(-1) ?? '';
    if (st.startsWith('R') || st.startsWith('C')) {
      files.push({ oldPath: t[i + 1] as string, path: t[i + 2] as string, status: 'renamed', added: 0, removed: 0 });
      i += 3;
    } else {
      files.push({ path: t[i + 1] as string, status: st.startsWith('A') ? 'added' : st.startsWith('D') ? 'deleted' : 'modified', added: 0, removed: 0 });
      i += 2;
    }
  }
  for (const f of files) {
    const [added, removed, p] = (t[i] ?? '').split('\t');
    f.added = Number(added) || 0;
    f.removed = Number(removed) || 0;
    i += p === '' ? 3 : 1; // a rename's numstat record names its two paths in the records after it
  }
  return files;
}
