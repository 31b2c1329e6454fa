/**
 * The MCP configuration files of code editors: where each editor keeps them, and safe edits of them (merge with
 * what is there, atomic temp-file + rename writes, a malformed file backed up rather than lost, one writer at a time).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory, writeTempDurably } from '../fs/durableWrite';
import { FileLockTimeout, withFileLock } from '../fs/fileLock';
import { NotAFileError, notAFile, readRegularFile, statIfExists } from '../fs/regularFile';
import { formatBytes } from '../http/readBounded';
import { duplicatedParent, parseJsonText, setMember } from './jsonText';
import { maskSecretArguments } from '../secretText';
import { redactUrlCredentials } from '../urlCredentials';

export const EDITORS = ['cursor', 'claude-code', 'claude-desktop', 'vscode', 'windsurf', 'gemini'] as const;
export type Editor = (typeof EDITORS)[number];
export type Scope = 'user' | 'project';

export interface ServerEntry {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

export interface Location {
  home: string;
  cwd: string;
  platform?: NodeJS.Platform;
  /** %APPDATA% on Windows. */
  appData?: string;
}

export class EditorConfigError extends Error {
  override name = 'EditorConfigError';
}

/** The file an editor reads its MCP servers from, and the top-level key holding them. */
export function configFile(editor: Editor, scope: Scope, loc: Location): { file: string; key: 'mcpServers' | 'servers' } {
  const platform = loc.platform ?? process.platform;
  const home = loc.home;
  const appSupport = (app: string) =>
    platform === 'darwin'
      ? path.join(home, 'Library', 'Application Support', app)
      : platform === 'win32'
        ? path.join(loc.appData ?? path.join(home, 'AppData', 'Roaming'), app)
        : path.join(home, '.config', app);
  const project = scope === 'project';
  switch (editor) {
    case 'cursor':
      return { file: path.join(project ? loc.cwd : home, '.cursor', 'mcp.json'), key: 'mcpServers' };
    case 'claude-code':
      return { file: project ? path.join(loc.cwd, '.mcp.json') : path.join(home, '.claude.json'), key: 'mcpServers' };
    case 'claude-desktop':
      if (project) throw new EditorConfigError('claude-desktop has no project scope (use --scope user)');
      return { file: path.join(appSupport('Claude'), 'claude_desktop_config.json'), key: 'mcpServers' };
    case 'vscode':
      return { file: project ? path.join(loc.cwd, '.vscode', 'mcp.json') : path.join(appSupport(path.join('Code', 'User')), 'mcp.json'), key: 'servers' };
    case 'windsurf':
      if (project) throw new EditorConfigError('windsurf has no project scope (use --scope user)');
      return { file: path.join(home, '.codeium', 'windsurf', 'mcp_config.json'), key: 'mcpServers' };
    case 'gemini':
      return { file: path.join(project ? loc.cwd : home, '.gemini', 'settings.json'), key: 'mcpServers' };
  }
}

/**
 * The most of a config file that is read. Editors' files are a few KiB, but Claude Code's ~/.claude.json also keeps
 * per-project state and grows with use: the limit is far above both. A larger file is refused, not read into memory.
 */
export const MAX_CONFIG_BYTES = 64 * 1024 * 1024;

/** `text` (ok): the file as read, less a byte order mark; edits are made to it (lib/mcp/jsonText.ts). */
type ReadResult = { state: 'missing' } | { state: 'ok'; data: Record<string, unknown>; text: string } | { state: 'malformed'; text: string; reason: string };

/** Why the file system refused a path, in a sentence that says what to do (`cannot write <file>: <this>`). */
function fsReason(err: NodeJS.ErrnoException, file: string): string {
  switch (err.code) {
    case 'EISDIR':
      return notAFileReason(file, 'a directory');
    case 'ENOTAFILE':
      return notAFileReason(file, (err as NotAFileError).kind);
    case 'ETOOLARGE':
      return `it is larger than ${formatBytes(MAX_CONFIG_BYTES)} (Armada reads at most that much of a config file); move it away or make it smaller`;
    case 'ENOTDIR':
    case 'EEXIST': {
      // the deepest part of the directory's path that exists is a file
      let dir = path.dirname(file);
      while (dir !== path.dirname(dir) && !fs.existsSync(dir)) dir = path.dirname(dir);
      return `${dir} is a file, not a directory; move it away`;
    }
    case 'EACCES':
    case 'EPERM':
      return `permission denied; check the permissions of ${path.dirname(file)} and the file`;
    case 'EROFS':
      return 'the file system is read-only';
    case 'ENOSPC':
    case 'EDQUOT':
      return 'no space left on the device; free some and try again';
    default:
      return err.message;
  }
}

/** A file-system error of `file` as the one-line EditorConfigError the CLI prints; anything else as it is. */
function asConfigError(err: unknown, verb: 'read' | 'write', file: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (err instanceof EditorConfigError || typeof code !== 'string' || !code.startsWith('E')) return err;
  return new EditorConfigError(`cannot ${verb} ${file}: ${fsReason(err as NodeJS.ErrnoException, file)}`);
}

/** Why `file` cannot hold the config when it (or what it links to) is `kind` (a directory, a device, a FIFO, a socket). */
function notAFileReason(file: string, kind: string): string {
  let target = file;
  try {
    target = followLinks(file);
  } catch {
    // too many links: the file itself is named
  }
  if (target === file) return `it is ${kind}, not a file; move it away`;
  return `it links to ${target}, which is ${kind}, not a file; point the link at a file or remove the link`;
}

/**
 * Refuses a path that names (after its links) something other than a regular file or nothing yet: a rename over a
 * device or a FIFO replaced it with a plain file, and a lock file beside it was made in the device's directory.
 */
function refuseNotAFile(file: string, verb: 'read' | 'write'): void {
  const st = statIfExists(file);
  const kind = st && notAFile(st);
  if (kind) throw asConfigError(new NotAFileError(file, kind), verb, file);
}

function readConfig(file: string): ReadResult {
  let text: string;
  try {
    // never fs.readFileSync: it waits forever on a FIFO and reads a zero device until the process aborts
    text = readRegularFile(file, MAX_CONFIG_BYTES);
  } catch (err) {
    // ENOTDIR: a part of the path is a file, so no such file exists (a write there says what to move)
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return { state: 'missing' };
    throw asConfigError(err, 'read', file);
  }
  if (!text.trim()) return { state: 'ok', data: {}, text: '' };
  // a UTF-8 byte order mark (Notepad and other Windows editors write one) is not part of the JSON; it is not kept
  const json = text.startsWith('\uFEFF') ? text.slice(1) : text;
  // comments and trailing commas are allowed (VS Code's mcp.json and Gemini's settings.json are JSONC) and kept
  const parsed = parseJsonText(json);
  return parsed.ok ? { state: 'ok', data: parsed.data, text: json } : { state: 'malformed', text, reason: parsed.reason };
}

/**
 * The file a path names once its symlinks are followed, also when the last one points to a file that does not exist
 * yet (realpath fails there). A config file kept in a dotfiles repository and linked into place is written there: a
 * rename over the link itself replaced it with a plain file, and the repository's copy never got the change.
 */
function followLinks(file: string): string {
  let current = file;
  for (let hops = 0; hops < 40; hops++) {
    let target: string;
    try {
      if (!fs.lstatSync(current).isSymbolicLink()) return current;
      target = fs.readlinkSync(current);
    } catch (err) {
      // no such file (yet), or a part of its path is a file: nothing to follow
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return current;
      throw err;
    }
    current = path.resolve(path.dirname(current), target);
  }
  throw new EditorConfigError(`${file}: too many levels of symbolic links`);
}

/**
 * Writes a file atomically and durably: a temp file in the same directory, fsync, rename over the target (mode kept),
 * fsync of the directory (lib/fs/durableWrite.ts). A symlink is followed: its target is replaced, the link stays.
 * A target that is not a regular file (a directory, a device, a FIFO, a socket) is refused, not replaced.
 */
export function writeFileAtomic(named: string, content: string): void {
  const file = followLinks(named);
  refuseNotAFile(named, 'write');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // a new file is private by default (it may hold API keys in env)
  const mode = (statIfExists(file)?.mode ?? 0o600) & 0o777;
  const tmp = writeTempDurably(path.dirname(file), path.basename(file), content, mode);
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDirectory(path.dirname(file));
}

/** Copies a file to `<file>.invalid-<timestamp>.bak` (never over an existing backup) and returns the backup path. */
function backup(file: string, text: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  let target = `${file}.invalid-${stamp}.bak`;
  for (let i = 1; fs.existsSync(target); i++) target = `${file}.invalid-${stamp}-${i}.bak`;
  writeFileAtomic(target, text);
  return target;
}

export interface EditResult {
  file: string;
  key: 'mcpServers' | 'servers';
  /** The whole file as written (or as it would be, with dryRun). */
  content: string;
  written: boolean;
  /** Where a malformed previous file was copied to. */
  backup?: string;
  /** What happened, for the user. */
  messages: string[];
}

/**
 * Runs a read-modify-write of `file` holding its lock (lib/fs/fileLock.ts) when it writes: two runs at once would each
 * read the file before the other's rename, and the later rename would drop the earlier run's entry.
 */
function editLocked<T>(file: string, writes: boolean, edit: () => T, opts: { makeDirectory?: boolean } = {}): T {
  try {
    if (!writes) return edit();
    // the lock is beside the file written, wherever it is linked from: never beside a device or a FIFO
    const target = followLinks(file);
    refuseNotAFile(file, 'write');
    if (opts.makeDirectory) fs.mkdirSync(path.dirname(target), { recursive: true });
    return withFileLock(target, edit);
  } catch (err) {
    if (err instanceof FileLockTimeout) throw new EditorConfigError(err.message);
    throw asConfigError(err, 'write', file);
  }
}

/**
 * A file without its owner's write permission is not replaced (the rename that replaces it needs only the directory's
 * permission, so a file made read-only on purpose was silently rewritten).
 */
function refuseReadOnly(file: string): void {
  let mode: number;
  try {
    mode = fs.statSync(file).mode;
  } catch {
    return; // no file yet
  }
  if ((mode & 0o200) === 0) throw new EditorConfigError(`${file} is read-only; make it writable (chmod u+w ${file}) to change it`);
}

/** The entry as the editor wants it: VS Code's `servers` entries also carry `type: "stdio"`. */
function editorEntry(key: 'mcpServers' | 'servers', entry: ServerEntry): Record<string, unknown> {
  const e: Record<string, unknown> = key === 'servers' ? { type: 'stdio' } : {};
  e.command = entry.command;
  e.args = entry.args;
  if (entry.env && Object.keys(entry.env).length) e.env = { ...entry.env };
  return e;
}

/** Refuses a file that writes the servers' key twice: editors read the last, an edit would go to the first. */
function refuseDuplicatedKey(file: string, text: string, path: string[]): void {
  const dup = duplicatedParent(text, path);
  if (dup) throw new EditorConfigError(`${file} has "${dup.key}" more than once (lines ${dup.lines.join(', ')}), and editors read only the last; merge them into one first`);
}

/** Adds (or replaces) one server, keeping every other server and every other top-level key of the file. */
export function addServer(opts: { editor: Editor; scope: Scope; name: string; entry: ServerEntry; location: Location; dryRun?: boolean }): EditResult {
  if (!opts.name.trim()) throw new EditorConfigError('the server name must not be empty');
  const { file, key } = configFile(opts.editor, opts.scope, opts.location);
  return editLocked(file, !opts.dryRun, () => addLocked(opts, file, key), { makeDirectory: true });
}

function addLocked(opts: { name: string; entry: ServerEntry; dryRun?: boolean }, file: string, key: 'mcpServers' | 'servers'): EditResult {
  const current = readConfig(file);
  const messages: string[] = [];
  let data: Record<string, unknown> = {};
  let backupPath: string | undefined;
  if (current.state === 'ok') data = current.data;
  if (!opts.dryRun) refuseReadOnly(file);
  if (current.state === 'malformed') {
    if (opts.dryRun) messages.push(`${file} is not valid JSON (${current.reason}); it would be backed up and replaced`);
    else {
      backupPath = backup(file, current.text);
      messages.push(`${file} was not valid JSON (${current.reason}); its content is kept in ${backupPath}`);
    }
  }
  const existing = data[key];
  if (existing !== undefined && (typeof existing !== 'object' || existing === null || Array.isArray(existing))) {
    throw new EditorConfigError(`${file}: "${key}" is not an object; fix or remove it first`);
  }
  // own keys only, and built from entries: a name such as `__proto__` or `constructor` is a server like any other
  // (`name in servers` and `servers[name] = …` read the prototype: `add __proto__` wrote nothing and said "replace")
  const before = Object.entries((existing as Record<string, unknown> | undefined) ?? {});
  const replaced = before.some(([name]) => name === opts.name);
  const entry = editorEntry(key, opts.entry);
  // a file that parsed is edited as text: every other byte (comments, formatting, numbers beyond a double) stays
  if (current.state === 'ok') refuseDuplicatedKey(file, current.text, [key, opts.name]);
  const content = current.state === 'ok' && current.text.trim() ? setMember(current.text, [key, opts.name], entry) : `${JSON.stringify({ [key]: Object.fromEntries([[opts.name, entry]]) }, null, 2)}\n`;
  if (!opts.dryRun) writeFileAtomic(file, content);
  messages.push(`${opts.dryRun ? 'would ' : ''}${replaced ? 'replace' : 'add'} server "${opts.name}" in ${file}`);
  return { file, key, content, written: !opts.dryRun, backup: backupPath, messages };
}

/** Removes one server by name; other servers and keys stay as they are. */
export function removeServer(opts: { editor: Editor; scope: Scope; name: string; location: Location; dryRun?: boolean }): EditResult & { removed: boolean } {
  const { file, key } = configFile(opts.editor, opts.scope, opts.location);
  // no directory, no file: nothing to remove (and no directory made for the lock)
  return editLocked(file, !opts.dryRun && isDirectory(path.dirname(followLinks(file))), () => removeLocked(opts, file, key));
}

function isDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function removeLocked(opts: { name: string; dryRun?: boolean }, file: string, key: 'mcpServers' | 'servers'): EditResult & { removed: boolean } {
  const current = readConfig(file);
  if (current.state === 'malformed') throw new EditorConfigError(`${file} is not valid JSON (${current.reason}); not changing it`);
  if (current.state === 'missing') return { file, key, content: '', written: false, removed: false, messages: [`${file} does not exist`] };
  refuseDuplicatedKey(file, current.text, [key, opts.name]);
  const servers = current.data[key] as Record<string, unknown> | undefined;
  if (!servers || typeof servers !== 'object' || !Object.hasOwn(servers, opts.name)) {
    return { file, key, content: current.text, written: false, removed: false, messages: [`no server "${opts.name}" in ${file}`] };
  }
  const content = setMember(current.text, [key, opts.name], undefined);
  if (!opts.dryRun) {
    refuseReadOnly(file);
    writeFileAtomic(file, content);
  }
  return { file, key, content, written: !opts.dryRun, removed: true, messages: [`${opts.dryRun ? 'would remove' : 'removed'} server "${opts.name}" from ${file}`] };
}

export interface ListedConfig {
  editor: Editor;
  scope: Scope;
  file: string;
  servers: Record<string, unknown>;
  error?: string;
}

/**
 * A server entry of an editor's file as `tools config list` shows it without --show-secrets: `env` and `headers`
 * values as `***`, the value of a key or header flag in `args` as `***` (`--api-key ***`, `--header 'X-Key: ***'`),
 * and URL credentials anywhere as `***`. The file is the editor's and may hold anything: what is not an object, an
 * array of strings or a string is kept as it is.
 */
export function maskServerSecrets(entry: unknown): unknown {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return entry;
  const out: Record<string, unknown> = { ...(entry as Record<string, unknown>) };
  for (const field of ['env', 'headers']) {
    const values = out[field];
    if (values && typeof values === 'object' && !Array.isArray(values)) {
      out[field] = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === 'string' && v !== '' ? '***' : v]));
    }
  }
  for (const field of ['command', 'url']) if (typeof out[field] === 'string') out[field] = redactUrlCredentials(out[field] as string);
  if (Array.isArray(out.args)) out.args = maskSecretArguments(out.args as unknown[]);
  return out;
}

/**
 * `content`, a config file's text as `add` or `remove` would write it, with each server entry under `key` as `list`
 * shows it without --show-secrets (maskServerSecrets): what `--dry-run` prints. Only the entries that hold a secret
 * are rewritten; the rest of the text stays as it is. Undefined when the text does not parse (it always does, being
 * the edit's own result), so that nothing unmasked is ever printed.
 */
export function maskContentSecrets(content: string, key: 'mcpServers' | 'servers'): string | undefined {
  const parsed = parseJsonText(content);
  if (!parsed.ok) return undefined;
  const servers = parsed.data[key];
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) return content;
  let text = content;
  for (const [name, entry] of Object.entries(servers)) {
    const masked = maskServerSecrets(entry);
    if (JSON.stringify(masked) !== JSON.stringify(entry)) text = setMember(text, [key, name], masked);
  }
  return text;
}

/** The servers in every existing config file (of one editor, or all). */
export function listServers(opts: { editor?: Editor; scope?: Scope; location: Location }): ListedConfig[] {
  const out: ListedConfig[] = [];
  for (const editor of opts.editor ? [opts.editor] : EDITORS) {
    for (const scope of opts.scope ? [opts.scope] : (['user', 'project'] as const)) {
      let where: ReturnType<typeof configFile>;
      try {
        where = configFile(editor, scope, opts.location);
      } catch {
        continue; // no such scope for this editor
      }
      let r: ReadResult;
      try {
        r = readConfig(where.file);
      } catch (err) {
        if (!(err instanceof EditorConfigError)) throw err;
        out.push({ editor, scope, file: where.file, servers: {}, error: err.message }); // and the others are still listed
        continue;
      }
      if (r.state === 'missing') continue;
      if (r.state === 'malformed') out.push({ editor, scope, file: where.file, servers: {}, error: `not valid JSON: ${r.reason}` });
      else {
        const servers = r.data[where.key] ?? {};
        if (typeof servers === 'object' && !Array.isArray(servers)) out.push({ editor, scope, file: where.file, servers: servers as Record<string, unknown> });
        else out.push({ editor, scope, file: where.file, servers: {}, error: `"${where.key}" is not an object` });
      }
    }
  }
  return out;
}
