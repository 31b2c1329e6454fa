/** Runs git as a child process (never through a shell) and answers the questions the services ask of a repository. */
import fs from 'node:fs';
import path from 'node:path';
import { childEnv } from './process/childEnv';
import { runProcess } from './process/launcher';

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'echo', LC_ALL: 'C' };
/** How the operator lets git reach remotes and configures it; passed on besides childEnv's allow-list. */
const GIT_PASS = ['SSH_AUTH_SOCK', 'GIT_SSH', 'GIT_SSH_COMMAND', 'GIT_CONFIG_GLOBAL', 'GIT_CONFIG_NOSYSTEM'];

/**
 * git's environment: the child allow-list, not the worker's whole environment. Hooks and configured commands
 * (core.fsmonitor, filters) of a repository run inside these git processes, and an agent can write those into the
 * repository it works in, so they must not see DATABASE_URL or the keys either.
 */
function gitEnv(): Record<string, string> {
  return childEnv({ vars: { ...Object.fromEntries(GIT_PASS.map((k) => [k, process.env[k]])), ...GIT_ENV } });
}

/** The most output of one git process that is read (past it the process is stopped and the call fails). */
export const GIT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * Runs `git args…` in cwd; resolves with the exit code instead of throwing on failure. The process is started by the
 * launcher (lib/process/launcher.ts), not forked from this large process.
 */

export function git(
  cwd: string,
  args: string[],
  opts: { timeoutMs?: number; input?: string; maxBuffer?: number; /** git's own variables for this run (GIT_INDEX_FILE) */ env?: Record<string, string> } = {},
): Promise<GitResult> {
  return runProcess({ file: 'git', args, cwd, env: { ...gitEnv(), ...opts.env }, timeoutMs: opts.timeoutMs ?? 120_000, maxBuffer: opts.maxBuffer ?? GIT_MAX_OUTPUT_BYTES, input: opts.input });
}

/** Runs git and throws with its stderr when it fails. */
export async function gitOrThrow(cwd: string, args: string[], opts: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<string> {
  const r = await git(cwd, args, opts);
  if (r.code !== 0) throw new Error(`git ${args[0]} failed: ${r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`}`);
  return r.stdout;
}

export type RepoKind = 'worktree' | 'bare' | 'none';

/** What a local path is: a git work tree (its top level), a bare repository, or neither. */
export async function inspectLocalRepo(p: string): Promise<{ kind: RepoKind; topLevel?: string }> {
  try {
    if (!fs.statSync(p).isDirectory()) return { kind: 'none' };
  } catch {
    return { kind: 'none' };
  }
  const bare = await git(p, ['rev-parse', '--is-bare-repository'], { timeoutMs: 10_000 });
  if (bare.code !== 0) return { kind: 'none' };
  if (bare.stdout.trim() === 'true') return { kind: 'bare' };
  const top = await git(p, ['rev-parse', '--show-toplevel'], { timeoutMs: 10_000 });
  if (top.code !== 0) return { kind: 'none' };
  return { kind: 'worktree', topLevel: path.resolve(top.stdout.trim()) };
}

/**
 * A branch name as `git check-ref-format --branch` accepts it, as a JSON Schema `pattern` (ECMA-262, Python and Rust's
 * fancy-regex alike), so validation refuses what git would refuse and the OpenAPI document says exactly what is
 * accepted. git's rules (refs/heads/<name>): not `HEAD`, no leading `-` (it would be read as an option: `--orphan=x`);
 * no control character, space, `~ ^ : ? * [ \`; no `..`, no `@{`; not starting or ending with `/`, no `//`; no
 * component starting with `.` or ending with `.lock`; not ending with `.`. `[\s\S]` rather than `.`, which stops at
 * line terminators (U+2028 is a character git allows). test/unit/branchName.test.ts checks it against git.
 */
export const BRANCH_NAME_PATTERN = [
  '^',
  '(?!-)',
  '(?!HEAD$)',
  '(?!/)',
  '(?![\\s\\S]*//)',
  '(?![\\s\\S]*/$)',
  '(?![\\s\\S]*\\.$)',
  '(?![\\s\\S]*\\.\\.)',
  '(?![\\s\\S]*@\\{)',
  '(?!(?:[\\s\\S]*/)?\\.)',
  '(?![\\s\\S]*\\.lock(?:/|$))',
  '[^\\x00-\\x20\\x7f~^:?*\\[\\\\]+$',
].join('');

export type RepoUrlKind = { kind: 'local'; path: string } | { kind: 'remote'; url: string } | { kind: 'invalid' };

/**
 * An http(s) remote: credentials before the host only as lib/urlCredentials.ts takes them out (no white space, `/`,
 * `?`, `#`, quote or angle bracket in them: percent-encode those), so git never gets them on its command line.
 */
const HTTP_REMOTE = `https?://([^\\s/?#'"<>]*@)?[^\\s/@]+/\\S+`;
/**
 * An ssh:// or git:// remote: a user name at most, no password. Armada takes credentials out of http(s) URLs only;
 * here the password would be on git's (and ssh's) command line, which every user of the host can read in /proc, and
 * ssh never uses it anyway (an SSH key does the authenticating; git:// has none).
 */
const SSH_REMOTE = '(ssh|git)://([^\\s/:@]*@)?[^\\s/@]+/\\S+';
/** scp-like `user@host:path` (its user name cannot hold a `:`). */
const SCP_REMOTE = '[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:\\S+';
const REMOTE = new RegExp(`^(${HTTP_REMOTE}|${SSH_REMOTE}|${SCP_REMOTE})$`);

/**
 * The forms classifyRepoUrl accepts, as a JSON Schema `pattern` for the request schema (so the document says it):
 * a file:// URL, an absolute path, an http(s)/ssh/git URL with a path, or scp-like `user@host:path`; a password in
 * an ssh:// or git:// URL, or in an http(s) URL in a form Armada cannot take out, is refused (docs/security.md,
 * "Credentials in URLs").
 */
export const REPO_URL_PATTERN = `^(file://[\\s\\S]*|/[\\s\\S]*|${HTTP_REMOTE}|${SSH_REMOTE}|${SCP_REMOTE})$`;

/** What a refused repository URL is told (the request schema's words for a value REPO_URL_PATTERN refuses). */
export const REPO_URL_RULE =
  'must be a code hosting URL (https, ssh or git@host:path), an absolute local path or a file:// URL; a password goes in an http(s) URL only (https://user:password@host/…, with any ? # \' " < > in it percent-encoded): an ssh:// or git:// URL cannot carry one, since it would be on git\'s command line, so use an SSH key (ssh://git@host/owner/repo.git) or a credential helper';

/** Classifies a project's repository URL: a local path / file:// URL, or a remote (https, ssh, git, scp-like). */
export function classifyRepoUrl(url: string): RepoUrlKind {
  if (url.startsWith('file://')) {
    try {
      return { kind: 'local', path: decodeURIComponent(new URL(url).pathname) };
    } catch {
      return { kind: 'invalid' };
    }
  }
  if (path.isAbsolute(url)) return { kind: 'local', path: path.resolve(url) };
  if (REMOTE.test(url)) return { kind: 'remote', url };
  return { kind: 'invalid' };
}
