/**
 * The untracked files of an attempt's worktree for its diff: listed by git (any name: git quotes the ones that are
 * not plain ASCII, and a quoted name keeps bytes that are not UTF-8), and diffed by git as new files through a
 * throw-away copy of the worktree's index in which they are intent-to-add.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { git } from '../git';
import { diffReadFailed } from './diffErrors';
import { unquoteBytes } from './diffParse';

/** An untracked file: its name as git writes it (`quoted`), as text (`name`), its path's bytes and its size. */
export interface Untracked {
  quoted: string;
  name: string;
  size: number;
  full: Buffer;
}

/** The worktree's untracked (and not ignored) files under pathspec, with their sizes (a symlink's own, not its target's). */
export async function untrackedFiles(cwd: string, pathspec: string[]): Promise<Untracked[]> {
  // without -z git quotes every name that is not plain ASCII
  const r = await git(cwd, ['-c', 'core.quotePath=true', 'ls-files', '--others', '--exclude-standard', '--', ...pathspec]);
  if (r.code !== 0) throw diffReadFailed('git ls-files', r);
  const files: Untracked[] = [];
  for (const quoted of r.stdout.split('\n').filter(Boolean)) {
    const bytes = unquoteBytes(quoted);
    const full = Buffer.concat([Buffer.from(`${cwd}${path.sep}`), bytes]);
    let size = 0;
    try {
      size = (await fs.promises.lstat(full)).size;
    } catch {
      continue; // removed meanwhile
    }
    files.push({ quoted, name: bytes.toString('utf8'), size, full });
  }
  return files;
}

/**
 * Runs `read` with git pointed at a copy of the worktree's index in which its untracked files, but `skip`, are added
 * as intent-to-add: git then diffs them as new files in the same diff as the tracked changes (symlinks, also dangling
 * ones, binary files and names of any bytes, with git's own quoting). The worktree's own index is not touched.
 */
export async function withUntrackedAdded<T>(cwd: string, skip: Untracked[], read: (env: Record<string, string>) => Promise<T>): Promise<T> {
  const where = await git(cwd, ['rev-parse', '--git-path', 'index']);
  if (where.code !== 0) throw diffReadFailed('git rev-parse', where);
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'armada-diff-index-'));
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
    await fs.promises.copyFile(path.resolve(cwd, where.stdout.trim()), env.GIT_INDEX_FILE);
    // git reads these pathspecs as it quotes names, so a quoted name (any bytes) is excluded as it is
    const excluded = skip.map((f) => (f.quoted.startsWith('"') ? `":(exclude,literal)${f.quoted.slice(1)}` : `:(exclude,literal)${f.quoted}`));
    const add = await git(cwd, ['-c', 'advice.addEmbeddedRepo=false', 'add', '--intent-to-add', '--pathspec-from-file=-'], { env, input: `${['.', ...excluded].join('\n')}\n` });
    if (add.code !== 0) throw diffReadFailed('git add --intent-to-add on a copy of the index', add);
    return await read(env);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

/** Lines of a file (counting a last line without a newline), read in chunks. */
export async function countLines(file: Buffer): Promise<number> {
  let n = 0;
  let last = 10;
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
    if (chunk.length) last = chunk[chunk.length - 1] as number;
  }
  return last === 10 ? n : n + 1;
}
