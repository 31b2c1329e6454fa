/**
 * Reads an attempt's diff from git: the worktree against the base commit (so uncommitted edits of a running agent
 * show too, untracked files as added), or base..branch in the repository once the worktree is gone.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { GIT_MAX_OUTPUT_BYTES, git } from '../git';
import { diffReadFailed, diffTooLarge } from './diffErrors';
import { cQuote, OMITTED_MARKER } from './diffParse';
import { type ChangedFile, parseRawNumstatZ } from './rawNumstat';
import { countLines, untrackedFiles, withUntrackedAdded } from './untrackedFiles';

export interface DiffSource {
  worktreePath: string | null;
  repoPath: string | null;
  baseCommit: string | null;
  branch: string | null;
}

/**
 * The most changed lines of one file a diff shows. A larger file (a generated data file, a bundle) is listed with its
 * counts and an OMITTED_MARKER line instead of its lines, so the whole diff stays readable and within git's output
 * buffer (GIT_MAX_OUTPUT_BYTES, 64 MiB: past it the read used to fail, and every diff endpoint with it). Only when
 * the whole diff is past that buffer: a smaller diff shows every file's lines, as git gives them.
 */
export const MAX_SHOWN_FILE_LINES = 20_000;
/** An untracked file larger than this is not read for its diff (its lines are counted, not shown). */
export const MAX_SHOWN_UNTRACKED_BYTES = 8 * 1024 * 1024;

/** The block that stands for a file whose changes are too many to show. */
function omittedBlock(
  file: ChangedFile,
  why = `more than the ${MAX_SHOWN_FILE_LINES} lines shown of one file`,
): string {
  const q = cQuote;
  const a = q(`a/${file.oldPath ?? file.path}`);
  const b = q(`b/${file.path}`);
  const header =
    file.status === 'added' ? 'new file mode 100644\n' : file.status === 'deleted' ? 'deleted file mode 100644\n' : file.status === 'renamed' ? `rename from ${q(file.oldPath ?? '')}\nrename to ${q(file.path)}\n` : '';
  return `diff --git ${a} ${b}\n${header}${OMITTED_MARKER}: ${file.added} lines added, ${file.removed} removed (${why})\n`;
}

/** Changes file by file (`--raw --numstat -z`): status, paths and line counts (binary files count 0). */
async function changedFiles(cwd: string, revs: string[], pathspec: string[], env: Record<string, string>): Promise<ChangedFile[]> {
  const r = await git(cwd, ['diff', '--raw', '--numstat', '-z', '-M', ...revs, '--', ...pathspec], { env });
  if (r.code !== 0) throw diffReadFailed('git diff --numstat', r);
  return parseRawNumstatZ(r.stdout);
}

/**
 * `git diff revs -- pathspec` whole when it is within git's output buffer; past it, again without the files over
 * MAX_SHOWN_FILE_LINES, which are listed as omitted blocks (one diff of the others, one numstat). Still past it (many
 * files, none over that limit), the limit is halved from the largest file still shown until the rest fits, down to
 * listing every file by its counts: files are never dropped, the largest lose their lines first. Still past it then
 * (the headers alone of changes without lines, e.g. mode changes of very many files): a DIFF_TOO_LARGE error, not a
 * part of the diff.
 */
async function diffWithin(cwd: string, revs: string[], pathspec: string[], env: Record<string, string>, maxBuffer?: number): Promise<string> {
  const args = ['diff', '--no-color', '--no-ext-diff', '-M', ...revs, '--'];
  const whole = await git(cwd, [...args, ...pathspec], { maxBuffer, env });
  if (whole.code === 0) return whole.stdout;
  // git's own failures exit 128 or 129; a git stopped at the buffer is 1 (lib/process/launcher.ts)
  if (whole.code >= 128) throw diffReadFailed('git diff', whole);
  const bytes = maxBuffer ?? GIT_MAX_OUTPUT_BYTES;
  const buffer = bytes >= 1024 * 1024 ? `${bytes / 1024 / 1024} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
  const files = await changedFiles(cwd, revs, pathspec, env);
  const linesOf = (f: ChangedFile) => f.added + f.removed;
  for (let limit = MAX_SHOWN_FILE_LINES; ; ) {
    const big = files.filter((f) => linesOf(f) > limit);
    if (big.length) {
      // the others: everything but the big files (their old names too), so no name has to be spelled back to git
      const exclude = big.flatMap((f) => (f.oldPath ? [f.oldPath, f.path] : [f.path])).map((p) => `:(exclude,literal)${p}`);
      const rest = await git(cwd, [...args, ...(pathspec.length ? pathspec : ['.']), ...exclude], { maxBuffer, env });
      if (rest.code >= 128) throw diffReadFailed('git diff', rest);
      if (rest.code === 0) {
        const why = limit === MAX_SHOWN_FILE_LINES ? undefined : `among the largest files of a diff past the ${buffer} read of one`;
        return rest.stdout + big.map((f) => omittedBlock(f, why)).join('');
      }
    }
    const most = files.reduce((m, f) => (linesOf(f) <= limit ? Math.max(m, linesOf(f)) : m), 0);
    if (most === 0) throw diffTooLarge(`past the ${buffer} read of one even with every file listed by its counts only`);
    limit = Math.floor(most / 2);
  }
}

/** Unified diff text (optionally of one file, a path relative to the worktree already checked by the caller). */
export async function readAttemptDiff(src: DiffSource, file?: string, opts: { maxBytes?: number } = {}): Promise<string> {
  if (!src.baseCommit) return '';
  // the name as it is: `*`, `?`, `[` and a leading `:` are pathspec magic to git, not to a caller naming one file
  const pathspec = file ? [`:(literal)${file}`] : [];
  const maxBuffer = opts.maxBytes; // tests: a smaller git output buffer than GIT_MAX_OUTPUT_BYTES
  if (src.worktreePath && fs.existsSync(src.worktreePath)) {
    const cwd = src.worktreePath;
    const base = src.baseCommit;
    const untracked = await untrackedFiles(cwd, pathspec);
    const large = untracked.filter((f) => f.size > MAX_SHOWN_UNTRACKED_BYTES);
    const text = untracked.length > large.length ? await withUntrackedAdded(cwd, large, (env) => diffWithin(cwd, [base], pathspec, env, maxBuffer)) : await diffWithin(cwd, [base], pathspec, {}, maxBuffer);
    const why = `a new file larger than the ${MAX_SHOWN_UNTRACKED_BYTES / 1024 / 1024} MiB read of one`;
    let omitted = '';
    for (const f of large) omitted += omittedBlock({ path: f.name, status: 'added', added: await countLines(f.full).catch(() => 0), removed: 0 }, why);
    return text + omitted;
  }
  if (src.repoPath && src.branch) {
    const has = await git(src.repoPath, ['rev-parse', '--verify', '--quiet', `refs/heads/${src.branch}`]);
    if (has.code !== 0) return '';
    return diffWithin(src.repoPath, [src.baseCommit, src.branch], pathspec, {}, maxBuffer);
  }
  return '';
}

/**
 * A cheap fingerprint of what `readAttemptDiff(src)` would return: HEAD, `git status` (untracked files included)
 * and the size and mtime of every file it lists; or the branch's commit once the worktree is gone. Equal
 * fingerprints mean an unchanged diff, so live diff streams read the diff only when this changes.
 */
export async function diffFingerprint(src: DiffSource): Promise<string> {
  const h = crypto.createHash('sha1').update(`${src.baseCommit}\0`);
  if (src.worktreePath && fs.existsSync(src.worktreePath)) {
    const [head, status] = await Promise.all([
      git(src.worktreePath, ['rev-parse', 'HEAD']),
      git(src.worktreePath, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames']),
    ]);
    h.update(`worktree\0${head.stdout}\0${status.stdout}\0`);
    for (const entry of status.stdout.split('\0').filter(Boolean)) {
      try {
        const st = fs.statSync(path.join(src.worktreePath, entry.slice(3)));
        h.update(`${st.size}:${st.mtimeMs}\0`);
      } catch {
        h.update('gone\0');
      }
    }
  } else if (src.repoPath && src.branch) {
    const ref = await git(src.repoPath, ['rev-parse', '--verify', '--quiet', `refs/heads/${src.branch}`]);
    h.update(`branch\0${ref.stdout}`);
  }
  return h.digest('hex');
}

/** A `file` query value as a worktree-relative path, or null when it would leave the worktree. */
export function safeRelativePath(root: string, file: string): string | null {
  if (file.includes('\0') || path.isAbsolute(file)) return null;
  const resolved = path.resolve(root, file);
  const rel = path.relative(root, resolved);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) return null;
  if (rel.split(path.sep).includes('.git')) return null;
  return rel;
}
