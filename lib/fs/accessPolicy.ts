/**
 * Which directories the filesystem endpoints may show. A requested path is decoded, normalised and checked
 * lexically, then resolved with realpath (symlinks) and checked again, so neither `..`, `%2e%2e`, doubled slashes
 * nor a symlink can reach outside the allowed roots or into a blocked path.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors';

/** Never listable, whatever the configuration says (the root itself only; its other children follow the allow list). */
export const ALWAYS_BLOCKED = ['/etc', '/var', '/sys', '/proc'];

/** Project directories people commonly keep repositories in, relative to the home directory. */
const COMMON_HOME_DIRS = ['projects', 'Projects', 'code', 'Code', 'src', 'dev', 'workspace', 'repos', 'git', 'Documents'];
/** Common project directories outside the home directory (containers, codespaces). */
const COMMON_ABSOLUTE_DIRS = ['/workspace', '/workspaces', '/projects', '/code', '/src'];

export const pathNotFound = (p: string) => new AppError(404, 'PATH_NOT_FOUND', `Path not found: ${p}`);
export const accessDenied = (p: string) => new AppError(403, 'ACCESS_DENIED', `Access denied: ${p} is outside the allowed directories`);
export const notADirectory = (p: string) => new AppError(400, 'NOT_A_DIRECTORY', `Not a directory: ${p}`);

export interface AccessPolicyInput {
  home: string;
  /** `filesystem.allowedPaths`: when set, replaces the home and common directories (project directories stay). */
  allowedPaths?: string[];
  /** `filesystem.blockedPaths`: added to the always-blocked list. */
  blockedPaths?: string[];
  /** git_repo_path of every registered project. */
  projectPaths: string[];
}

export interface AccessPolicy {
  allowed: string[];
  blocked: string[];
  /** true when p (absolute, normalised) may be shown. */
  permits(p: string): boolean;
}

const within = (p: string, root: string): boolean => p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);

async function realOrSelf(p: string): Promise<string> {
  try {
    return await fs.realpath(p);
  } catch {
    return p;
  }
}

function expandHome(p: string, home: string): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return path.join(home, p.slice(2));
  return p;
}

/** Both the written and the real form of every root, so a root reached through a symlink still matches. */
async function bothForms(paths: string[], home: string): Promise<string[]> {
  const out = new Set<string>();
  for (const raw of paths) {
    const p = path.resolve(expandHome(raw, home));
    out.add(p);
    out.add(await realOrSelf(p));
  }
  return [...out];
}

/** The configured roots (`filesystem.allowedPaths`, else the home and common project directories), as written. */
function baseRoots(input: Pick<AccessPolicyInput, 'home' | 'allowedPaths'>): string[] {
  return input.allowedPaths ? input.allowedPaths : [input.home, ...COMMON_HOME_DIRS.map((d) => path.join(input.home, d)), ...COMMON_ABSOLUTE_DIRS];
}

/**
 * Where browsing can start: the configured roots (not the projects' own directories) that exist as directories and
 * are permitted, `~` expanded, in their configured order, each once.
 */
export async function browsableRoots(input: AccessPolicyInput, policy: AccessPolicy): Promise<string[]> {
  const out: string[] = [];
  for (const raw of baseRoots(input)) {
    const p = path.resolve(expandHome(raw, input.home));
    if (out.includes(p) || !policy.permits(p)) continue;
    try {
      if ((await fs.stat(p)).isDirectory()) out.push(p);
    } catch {
      // a default root this host does not have (/workspace, ~/Projects…)
    }
  }
  return out;
}

export async function buildAccessPolicy(input: AccessPolicyInput): Promise<AccessPolicy> {
  const base = baseRoots(input);
  const allowed = (await bothForms([...base, ...input.projectPaths], input.home)).filter((p) => p !== '/');
  const blocked = await bothForms([...ALWAYS_BLOCKED, ...(input.blockedPaths ?? [])], input.home);
  return {
    allowed,
    blocked,
    permits(p: string): boolean {
      if (p === '/') return false;
      if (blocked.some((b) => within(p, b))) return false;
      return allowed.some((a) => within(p, a));
    },
  };
}

/**
 * Turns the `path` query value into an absolute, normalised path: percent-decoding repeated until stable (so
 * `%252e%252e` is caught too), blanks around it dropped, `~` expanded, `..` and `//` folded. Relative paths and NUL
 * bytes are refused. `decode` false: taken as written, not decoded and only blanks before it dropped (no absolute
 * path starts with one), so a name ending in a blank is kept.
 */
export function normaliseRequestedPath(raw: string, home: string, decode = true): string {
  let p = raw;
  for (let i = 0; decode && i < 5; i++) {
    let next: string;
    try {
      next = decodeURIComponent(p);
    } catch {
      break;
    }
    if (next === p) break;
    p = next;
  }
  if (p.includes('\0')) throw accessDenied(raw);
  p = expandHome(decode ? p.trim() : p.trimStart(), home);
  if (!path.isAbsolute(p)) throw new AppError(400, 'VALIDATION_ERROR', 'path must be an absolute path', { path: 'must be an absolute path' });
  return path.resolve(p);
}

/**
 * Resolves a requested directory: ACCESS_DENIED (403) when it is outside the allowed roots either as written or
 * after symlinks, PATH_NOT_FOUND (404) when it does not exist, NOT_A_DIRECTORY (400) when it is a file.
 * The lexical check comes first so the answer never reveals whether a path outside the roots exists.
 */
export async function resolveAllowedDirectory(raw: string, policy: AccessPolicy, home: string): Promise<string> {
  const lexical = normaliseRequestedPath(raw, home);
  // A name that holds %XX (a directory `x%41y`) or ends in a blank (` spaced `) is taken as written when that
  // directory exists and is allowed: decoding it again named another one (`xAy`), and trimming it one without the
  // blank, so a directory the listing showed could not be opened. Otherwise the decoded, trimmed path is checked as
  // before (an encoded `..` is still folded and refused).
  let literal: string | undefined;
  try {
    literal = normaliseRequestedPath(raw, home, false);
  } catch {
    literal = undefined; // not a path as written (`~ `): only the trimmed form names one
  }
  if (literal !== undefined && literal !== lexical && policy.permits(literal)) {
    const real = await fs.realpath(literal).catch(() => undefined);
    if (real && policy.permits(real) && (await fs.stat(real)).isDirectory()) return real;
  }
  if (!policy.permits(lexical)) throw accessDenied(lexical);
  let real: string;
  try {
    real = await fs.realpath(lexical);
  } catch {
    throw pathNotFound(lexical);
  }
  if (!policy.permits(real)) throw accessDenied(lexical);
  const st = await fs.stat(real);
  if (!st.isDirectory()) throw notADirectory(lexical);
  return real;
}
