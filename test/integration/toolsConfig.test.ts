/**
 * `armada tools config` in a temporary HOME: the library for the cases, and the real CLI (HOME and cwd of a temp dir)
 * for the command line itself.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { addServer, configFile, EDITORS, listServers, removeServer, writeFileAtomic, type Location } from '../../lib/mcp/editorConfig';
import { parseJsonText } from '../../lib/mcp/jsonText';
import { ARMADA_BIN as BIN } from '../support/armadaProcess';

let home: string;
let cwd: string;
let loc: Location;

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-home-'));
  cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-proj-'));
  loc = { home, cwd, platform: 'linux' };
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(cwd, { recursive: true, force: true });
});

/** Our own null (minor 3) or zero (minor 5) device under the temp HOME: never a link to the system's. */
const mknod = (file: string, minor: 3 | 5) => execFileSync('mknod', ['-m', '666', file, 'c', '1', String(minor)]);
async function listenOn(file: string): Promise<net.Server> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(file, resolve));
  return server;
}
const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8'));
const entry = { command: 'node', args: ['server.js', '--port', '1'], env: { API_KEY: 'sk-abc=123 "quoted"', BASE_URL: 'http://127.0.0.1:9/x?y=1&z' } };

/** `code` is the exit code, or the signal that ended the run. */
async function cli(args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  try {
    // a generous deadline: a run that hangs (an open that waits for a FIFO's writer) ends as a failure, not a stuck test
    const r = await promisify(execFile)(process.execPath, [BIN, 'tools', 'config', ...args], { cwd, env: { ...process.env, HOME: home }, timeout: 30_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number | null; signal: string | null; stdout: string; stderr: string };
    return { code: err.code ?? err.signal ?? 'unknown', stdout: err.stdout, stderr: err.stderr };
  }
}

describe('editor config files', () => {
  test('the files each editor reads', () => {
    expect(configFile('cursor', 'user', loc)).toEqual({ file: path.join(home, '.cursor', 'mcp.json'), key: 'mcpServers' });
    expect(configFile('cursor', 'project', loc).file).toBe(path.join(cwd, '.cursor', 'mcp.json'));
    expect(configFile('claude-code', 'project', loc).file).toBe(path.join(cwd, '.mcp.json'));
    expect(configFile('claude-desktop', 'user', loc).file).toBe(path.join(home, '.config', 'Claude', 'claude_desktop_config.json'));
    expect(configFile('claude-desktop', 'user', { ...loc, platform: 'darwin' }).file).toBe(path.join(home, 'Library', 'Application Support', 'Claude', 'claude_desktop_config.json'));
    expect(configFile('vscode', 'project', loc)).toEqual({ file: path.join(cwd, '.vscode', 'mcp.json'), key: 'servers' });
    expect(configFile('vscode', 'user', loc)).toEqual({ file: path.join(home, '.config', 'Code', 'User', 'mcp.json'), key: 'servers' });
    expect(configFile('windsurf', 'user', loc).file).toBe(path.join(home, '.codeium', 'windsurf', 'mcp_config.json'));
    expect(configFile('gemini', 'user', loc).file).toBe(path.join(home, '.gemini', 'settings.json'));
    expect(() => configFile('claude-desktop', 'project', loc)).toThrow(/no project scope/);
  });

  test('adding to an existing file keeps the other servers and keys; the directory is created', () => {
    const file = path.join(home, '.cursor', 'mcp.json');
    expect(fs.existsSync(path.dirname(file))).toBe(false);
    addServer({ editor: 'cursor', scope: 'user', name: 'first', entry: { command: 'a', args: [] }, location: loc });
    expect(readJson(file)).toEqual({ mcpServers: { first: { command: 'a', args: [] } } });
    // someone else's keys and servers
    const data = readJson(file);
    data.mcpServers.other = { command: 'other-server', args: ['--x'], env: { T: '1' } };
    data.theme = 'dark';
    fs.writeFileSync(file, JSON.stringify(data));
    const r = addServer({ editor: 'cursor', scope: 'user', name: 'armada', entry, location: loc });
    expect(r.written).toBe(true);
    expect(readJson(file)).toEqual({
      theme: 'dark',
      mcpServers: { first: { command: 'a', args: [] }, other: { command: 'other-server', args: ['--x'], env: { T: '1' } }, armada: entry },
    });
    // no temp files are left behind
    expect(fs.readdirSync(path.dirname(file))).toEqual(['mcp.json']);
  });

  test('env values are written exactly as given', () => {
    for (const editor of EDITORS) {
      const r = addServer({ editor, scope: 'user', name: 'svc', entry, location: loc });
      const servers = readJson(r.file)[r.key];
      expect(servers.svc.env).toEqual({ API_KEY: 'sk-abc=123 "quoted"', BASE_URL: 'http://127.0.0.1:9/x?y=1&z' });
    }
  });

  test('VS Code gets top-level "servers" (with type stdio), project scope under the current directory', () => {
    const r = addServer({ editor: 'vscode', scope: 'project', name: 'armada', entry, location: loc });
    expect(r.file).toBe(path.join(cwd, '.vscode', 'mcp.json'));
    const written = readJson(r.file);
    expect(Object.keys(written)).toEqual(['servers']);
    expect(written.servers.armada).toEqual({ type: 'stdio', ...entry });
  });

  test('a malformed file is backed up, not lost, and the user is told', () => {
    const file = path.join(home, '.gemini', 'settings.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const broken = '{ "mcpServers": { "keep": { "command": "x" }, } // comment\n';
    fs.writeFileSync(file, broken);
    const r = addServer({ editor: 'gemini', scope: 'user', name: 'armada', entry, location: loc });
    expect(r.backup).toBeDefined();
    expect(fs.readFileSync(r.backup as string, 'utf8')).toBe(broken);
    expect(r.messages.join('\n')).toContain(r.backup as string);
    expect(readJson(file)).toEqual({ mcpServers: { armada: entry } });
    // remove refuses to touch a malformed file
    fs.writeFileSync(file, broken);
    expect(() => removeServer({ editor: 'gemini', scope: 'user', name: 'keep', location: loc })).toThrow(/not valid JSON/);
    expect(fs.readFileSync(file, 'utf8')).toBe(broken);
  });

  test('remove deletes only the named entry', () => {
    const file = path.join(cwd, '.mcp.json');
    fs.writeFileSync(file, JSON.stringify({ mcpServers: { a: { command: 'a', args: [] }, b: { command: 'b', args: ['1'] } }, other: { x: 1 } }));
    const r = removeServer({ editor: 'claude-code', scope: 'project', name: 'a', location: loc });
    expect(r.removed).toBe(true);
    expect(readJson(file)).toEqual({ mcpServers: { b: { command: 'b', args: ['1'] } }, other: { x: 1 } });
    expect(removeServer({ editor: 'claude-code', scope: 'project', name: 'zzz', location: loc }).removed).toBe(false);
    expect(readJson(file)).toEqual({ mcpServers: { b: { command: 'b', args: ['1'] } }, other: { x: 1 } });
  });

  test('names that are properties of every object (__proto__, constructor, valueOf) are servers like any other', () => {
    const file = path.join(cwd, '.mcp.json');
    for (const name of ['__proto__', 'constructor', 'valueOf']) {
      expect(removeServer({ editor: 'claude-code', scope: 'project', name, location: loc }).removed).toBe(false);
      expect(addServer({ editor: 'claude-code', scope: 'project', name, entry: { command: name, args: [] }, location: loc }).messages).toEqual([`add server "${name}" in ${file}`]);
    }
    const written = readJson(file).mcpServers;
    expect(Object.keys(written)).toEqual(['__proto__', 'constructor', 'valueOf']);
    expect(Object.getOwnPropertyDescriptor(written, '__proto__')?.value).toEqual({ command: '__proto__', args: [] });
    expect(addServer({ editor: 'claude-code', scope: 'project', name: 'constructor', entry: { command: 'again', args: [] }, location: loc }).messages).toEqual([`replace server "constructor" in ${file}`]);
    expect(removeServer({ editor: 'claude-code', scope: 'project', name: '__proto__', location: loc }).removed).toBe(true);
    expect(readJson(file)).toEqual({ mcpServers: { constructor: { command: 'again', args: [] }, valueOf: { command: 'valueOf', args: [] } } });
  });

  test('a config file that is a symlink (dotfiles) is written through: the link stays, its target gets the change', () => {
    const dotfiles = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-dotfiles-'));
    try {
      const target = path.join(dotfiles, 'cursor', 'mcp.json');
      fs.mkdirSync(path.dirname(target));
      fs.writeFileSync(target, JSON.stringify({ mcpServers: { keep: { command: 'k', args: [] } } }));
      fs.chmodSync(target, 0o640);
      const file = path.join(home, '.cursor', 'mcp.json');
      fs.mkdirSync(path.dirname(file));
      fs.symlinkSync(path.relative(path.dirname(file), target), file); // relative, as stow makes them
      addServer({ editor: 'cursor', scope: 'user', name: 'armada', entry, location: loc });
      expect(fs.lstatSync(file).isSymbolicLink()).toBe(true);
      expect(readJson(target)).toEqual({ mcpServers: { keep: { command: 'k', args: [] }, armada: entry } });
      expect(fs.statSync(target).mode & 0o777).toBe(0o640);
      expect(removeServer({ editor: 'cursor', scope: 'user', name: 'keep', location: loc }).removed).toBe(true);
      expect(fs.lstatSync(file).isSymbolicLink()).toBe(true);
      expect(readJson(target)).toEqual({ mcpServers: { armada: entry } });
      // nothing left beside the link or the target
      expect(fs.readdirSync(path.dirname(file))).toEqual(['mcp.json']);
      expect(fs.readdirSync(path.dirname(target))).toEqual(['mcp.json']);
      // a link whose target does not exist yet: the target is created, the link kept
      const vscode = path.join(home, '.config', 'Code', 'User', 'mcp.json');
      fs.mkdirSync(path.dirname(vscode), { recursive: true });
      fs.symlinkSync(path.join(dotfiles, 'vscode-mcp.json'), vscode);
      addServer({ editor: 'vscode', scope: 'user', name: 'armada', entry, location: loc });
      expect(fs.lstatSync(vscode).isSymbolicLink()).toBe(true);
      expect(readJson(path.join(dotfiles, 'vscode-mcp.json')).servers.armada).toEqual({ type: 'stdio', ...entry });
    } finally {
      fs.rmSync(dotfiles, { recursive: true, force: true });
    }
  });

  test('a JSONC file (comments, trailing commas) is edited in place: comments, layout and other values stay', () => {
    const file = path.join(cwd, '.vscode', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const before = [
      '// servers for this repository',
      '{',
      '    "servers": {',
      '        /* the team\'s linter */',
      '        "lint": { "type": "stdio", "command": "lint-mcp", "args": [] },',
      '    },',
      '    "inputs": [], // none yet',
      '    "big": 12345678901234567890,',
      '    "huge": 1e400',
      '}',
      '',
    ].join('\n');
    fs.writeFileSync(file, before);
    const r = addServer({ editor: 'vscode', scope: 'project', name: 'armada', entry, location: loc });
    expect(r.backup).toBeUndefined();
    const after = fs.readFileSync(file, 'utf8');
    expect(after).toBe(r.content);
    // every line the edit did not touch is still there, byte for byte (the line it continues may be laid out anew)
    for (const line of before.split('\n').filter((l) => !l.includes('"lint"') && l !== '    },')) expect(after).toContain(line);
    expect(listServers({ editor: 'vscode', scope: 'project', location: loc })[0]?.servers.lint).toEqual({ type: 'stdio', command: 'lint-mcp', args: [] });
    // the new entry is indented like its neighbours
    expect(after).toMatch(/\n {8}"armada": \{\n {12}"type": "stdio",/);
    const listed = listServers({ editor: 'vscode', scope: 'project', location: loc });
    expect(Object.keys(listed[0]?.servers ?? {})).toEqual(['lint', 'armada']);
    expect(listed[0]?.error).toBeUndefined();
    // remove takes out only that entry
    expect(removeServer({ editor: 'vscode', scope: 'project', name: 'armada', location: loc }).removed).toBe(true);
    const removed = fs.readFileSync(file, 'utf8');
    expect(removed).not.toContain('armada');
    for (const line of ['// servers for this repository', '/* the team\'s linter */', '"inputs": [], // none yet', '"big": 12345678901234567890', '"huge": 1e400']) expect(removed).toContain(line);
  });

  test('a key written twice: the server editors read (the last copy) is the one replaced or removed; a servers key written twice is refused', () => {
    const file = path.join(home, '.cursor', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // editors (and JSON.parse) read the last "s": before, add replaced the first, and remove took it out and said "removed"
    fs.writeFileSync(file, '{\n  // mine\n  "mcpServers": {"s": {"command": "old1"}, "t": {"command": "t"}, "s": {"command": "old2"}}\n}\n');
    expect(addServer({ editor: 'cursor', scope: 'user', name: 's', entry, location: loc }).messages).toEqual([`replace server "s" in ${file}`]);
    const added = fs.readFileSync(file, 'utf8');
    expect(added).toContain('// mine');
    expect(added.match(/"s"/g)).toHaveLength(1);
    expect(listServers({ editor: 'cursor', scope: 'user', location: loc })[0]?.servers).toEqual({ t: { command: 't' }, s: entry });
    fs.writeFileSync(file, '{"mcpServers": {"s": {"command": "old1"}, "t": {"command": "t"}, "s": {"command": "old2"}}}\n');
    expect(removeServer({ editor: 'cursor', scope: 'user', name: 's', location: loc }).removed).toBe(true);
    expect(readJson(file)).toEqual({ mcpServers: { t: { command: 't' } } });

    // two "mcpServers": an added server went into the first, which no editor reads; refused, the file left as it is
    const twice = '{\n  "mcpServers": {"a": {"command": "a"}},\n  "mcpServers": {"b": {"command": "b"}}\n}\n';
    fs.writeFileSync(file, twice);
    const refusal = `${file} has "mcpServers" more than once (lines 2, 3), and editors read only the last; merge them into one first`;
    expect(() => addServer({ editor: 'cursor', scope: 'user', name: 'new', entry, location: loc })).toThrow(refusal);
    expect(() => removeServer({ editor: 'cursor', scope: 'user', name: 'b', location: loc })).toThrow(refusal);
    expect(fs.readFileSync(file, 'utf8')).toBe(twice);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['mcp.json']);
  });

  test('numbers JavaScript cannot hold in other keys are written back as they were (a plain JSON file)', () => {
    const file = path.join(cwd, '.mcp.json');
    fs.writeFileSync(file, '{"a":1e400,"b":12345678901234567890,"mcpServers":{}}');
    addServer({ editor: 'claude-code', scope: 'project', name: 'armada', entry, location: loc });
    const text = fs.readFileSync(file, 'utf8');
    expect(text).toMatch(/"a": ?1e400/);
    expect(text).toMatch(/"b": ?12345678901234567890/);
    expect(readJson(file).mcpServers).toEqual({ armada: entry });
  });

  test('a file that starts with a byte order mark (Windows editors write one) is read as the JSON it is, not backed up and replaced', () => {
    const file = path.join(home, '.config', 'Claude', 'claude_desktop_config.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `\uFEFF${JSON.stringify({ mcpServers: { keep: { command: 'k', args: [] } }, globalShortcut: 'Ctrl+Space' })}`);
    const r = addServer({ editor: 'claude-desktop', scope: 'user', name: 'armada', entry, location: loc });
    expect(r.backup).toBeUndefined();
    expect(readJson(file)).toEqual({ mcpServers: { keep: { command: 'k', args: [] }, armada: entry }, globalShortcut: 'Ctrl+Space' });
    expect(fs.readdirSync(path.dirname(file))).toEqual(['claude_desktop_config.json']);
  });

  test('a read-only file is not replaced: add and remove refuse, saying how to make it writable', () => {
    const file = path.join(cwd, '.mcp.json');
    const before = JSON.stringify({ mcpServers: { keep: { command: 'k', args: [] } } });
    fs.writeFileSync(file, before);
    fs.chmodSync(file, 0o444);
    const refusal = `${file} is read-only; make it writable (chmod u+w ${file}) to change it`;
    expect(() => addServer({ editor: 'claude-code', scope: 'project', name: 'armada', entry, location: loc })).toThrow(refusal);
    expect(() => removeServer({ editor: 'claude-code', scope: 'project', name: 'keep', location: loc })).toThrow(refusal);
    expect(removeServer({ editor: 'claude-code', scope: 'project', name: 'absent', location: loc }).removed).toBe(false); // nothing to write
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(fs.statSync(file).mode & 0o777).toBe(0o444);
    expect(fs.readdirSync(cwd)).toEqual(['.mcp.json']);
    fs.chmodSync(file, 0o644);
    expect(addServer({ editor: 'claude-code', scope: 'project', name: 'armada', entry, location: loc }).written).toBe(true);
  });

  test('a path that cannot hold the file: one message naming it and what to do; list shows it and goes on', () => {
    fs.writeFileSync(path.join(home, '.cursor'), 'a file where the directory should be');
    expect(() => addServer({ editor: 'cursor', scope: 'user', name: 'a', entry, location: loc })).toThrow(
      `cannot write ${path.join(home, '.cursor', 'mcp.json')}: ${path.join(home, '.cursor')} is a file, not a directory; move it away`,
    );
    expect(removeServer({ editor: 'cursor', scope: 'user', name: 'a', location: loc }).removed).toBe(false); // no such file there
    fs.mkdirSync(path.join(home, '.config'));
    fs.writeFileSync(path.join(home, '.config', 'Code'), 'a file where a directory should be');
    expect(() => addServer({ editor: 'vscode', scope: 'user', name: 'a', entry, location: loc })).toThrow(
      `cannot write ${path.join(home, '.config', 'Code', 'User', 'mcp.json')}: ${path.join(home, '.config', 'Code')} is a file, not a directory; move it away`,
    );
    fs.mkdirSync(path.join(home, '.gemini', 'settings.json'), { recursive: true });
    expect(() => addServer({ editor: 'gemini', scope: 'user', name: 'a', entry, location: loc })).toThrow(
      `cannot write ${path.join(home, '.gemini', 'settings.json')}: it is a directory, not a file; move it away`,
    );
    addServer({ editor: 'windsurf', scope: 'user', name: 'w', entry, location: loc });
    fs.rmSync(path.join(home, '.config'), { recursive: true });
    expect(listServers({ location: loc }).map((l) => [l.editor, l.error ?? Object.keys(l.servers)])).toEqual([
      ['windsurf', ['w']],
      ['gemini', `cannot read ${path.join(home, '.gemini', 'settings.json')}: it is a directory, not a file; move it away`],
    ]);
  });

  test('the atomic write refuses a target that is not a regular file (a device, a FIFO, a socket), also through a link', async () => {
    const dev = path.join(home, 'dev');
    fs.mkdirSync(dev);
    const nul = path.join(dev, 'mynull');
    mknod(nul, 3);
    const fifo = path.join(dev, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const sock = path.join(dev, 'sock');
    const server = await listenOn(sock);
    try {
      const link = path.join(home, 'link.json');
      fs.symlinkSync(nul, link);
      expect(() => writeFileAtomic(link, '{}')).toThrow(`cannot write ${link}: it links to ${nul}, which is a character device, not a file; point the link at a file or remove the link`);
      expect(() => writeFileAtomic(fifo, '{}')).toThrow(`cannot write ${fifo}: it is a FIFO (named pipe), not a file; move it away`);
      expect(() => writeFileAtomic(sock, '{}')).toThrow(`cannot write ${sock}: it is a socket, not a file; move it away`);
      expect(fs.statSync(nul).isCharacterDevice()).toBe(true);
      expect(fs.statSync(fifo).isFIFO()).toBe(true);
      expect(fs.statSync(sock).isSocket()).toBe(true);
      expect(fs.readdirSync(dev).sort()).toEqual(['fifo', 'mynull', 'sock']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('dry run writes nothing; list finds the files', () => {
    const r = addServer({ editor: 'windsurf', scope: 'user', name: 'armada', entry, location: loc, dryRun: true });
    expect(r.written).toBe(false);
    expect(JSON.parse(r.content)).toEqual({ mcpServers: { armada: entry } });
    expect(fs.existsSync(r.file)).toBe(false);
    addServer({ editor: 'cursor', scope: 'project', name: 'p', entry, location: loc });
    addServer({ editor: 'claude-desktop', scope: 'user', name: 'd', entry, location: loc });
    const listed = listServers({ location: loc });
    expect(listed.map((l) => [l.editor, l.scope, Object.keys(l.servers)])).toEqual([
      ['cursor', 'project', ['p']],
      ['claude-desktop', 'user', ['d']],
    ]);
  });
});

describe('several writers at once', () => {
  /**
   * Processes that each add their own servers to one file, all starting at the same moment (they wait for a `go`
   * file): a read-modify-write without a lock lost the entries of the runs it overwrote (250 of 600 were left).
   */
  test('every process keeps every entry it added, and the file is valid JSON throughout', async () => {
    const go = path.join(home, 'go');
    const script = path.join(home, 'writer.js');
    fs.writeFileSync(
      script,
      `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register();
       const fs = require('node:fs');
       const { addServer } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'lib', 'mcp', 'editorConfig.ts'))});
       const [who, count] = process.argv.slice(2);
       fs.writeSync(1, 'ready\\n'); // synchronous: the wait below holds the event loop
       while (!fs.existsSync(${JSON.stringify(go)})) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
       for (let i = 0; i < Number(count); i++) {
         addServer({ editor: 'cursor', scope: 'user', name: who + '-' + i, entry: { command: who, args: [String(i)] }, location: ${JSON.stringify(loc)} });
       }`,
    );
    const writers = ['a', 'b', 'c'].map((who) => {
      const child = spawn(process.execPath, [script, who, '100'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const done = new Promise<string>((resolve) => child.once('exit', (code) => resolve(`${code} ${stderr}`.trim())));
      const ready = Promise.race([new Promise<void>((resolve) => child.stdout.once('data', () => resolve())), done.then((r) => Promise.reject(new Error(r)))]);
      return { ready, done };
    });
    await Promise.all(writers.map((w) => w.ready));
    fs.writeFileSync(go, '');
    expect(await Promise.all(writers.map((w) => w.done))).toEqual(['0', '0', '0']);
    const servers = readJson(path.join(home, '.cursor', 'mcp.json')).mcpServers;
    expect(Object.keys(servers).length).toBe(300);
    for (const who of ['a', 'b', 'c']) for (let i = 0; i < 100; i++) expect(servers[`${who}-${i}`]).toEqual({ command: who, args: [String(i)] });
    // no lock or temp file is left behind
    expect(fs.readdirSync(path.join(home, '.cursor'))).toEqual(['mcp.json']);
  }, 120_000);
});

describe('armada tools config (CLI)', () => {
  test('add with a command, add an OpenAPI server, list, dry run, remove', async () => {
    const file = path.join(home, '.cursor', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ mcpServers: { existing: { command: 'keep-me', args: [] } } }));

    const add = await cli(['add', 'fs', '--editor', 'cursor', '--env', 'TOKEN=a=b c', '--', 'npx', '-y', 'some-server', '--flag']);
    expect(add.code).toBe(0);
    expect(readJson(file).mcpServers).toEqual({ existing: { command: 'keep-me', args: [] }, fs: { command: 'npx', args: ['-y', 'some-server', '--flag'], env: { TOKEN: 'a=b c' } } });

    const api = await cli(['add', 'petstore', '--editor', 'cursor', '--openapi', 'https://example.test/openapi.json', '--base-url', 'https://api.example.test', '--env', 'OPENAPI_API_KEY=k']);
    expect(api.code).toBe(0);
    const pet = readJson(file).mcpServers.petstore;
    expect(pet.command).toBe(process.execPath);
    expect(pet.args).toEqual([BIN, 'tools', 'openapi', 'https://example.test/openapi.json', '--base-url', 'https://api.example.test']);
    expect(pet.env).toEqual({ OPENAPI_API_KEY: 'k' });
    // a document file is written as its absolute path (the editor runs the server elsewhere); anything else is refused
    fs.writeFileSync(path.join(cwd, 'doc.json'), '{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}');
    expect((await cli(['add', 'local', '--editor', 'cursor', '--openapi', 'doc.json'])).code).toBe(0);
    expect(readJson(file).mcpServers.local.args).toEqual([BIN, 'tools', 'openapi', path.join(fs.realpathSync(cwd), 'doc.json')]);
    for (const value of ['not a url', 'missing.json', 'ftp://example.test/x', 'file:///nowhere/doc.json', '.']) {
      const refused = await cli(['add', 'z', '--editor', 'cursor', '--openapi', value]);
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim()).toBe(`armada tools: --openapi "${value}" is neither an http(s) URL nor a file that exists; give the document's URL or the path of its file`);
    }
    expect(readJson(file).mcpServers.z).toBeUndefined();
    // a --base-url every tool call would fail with is refused too, not written
    for (const value of ['not a url', 'ftp://api.example.test', 'file:///etc', '']) {
      const refused = await cli(['add', 'z', '--editor', 'cursor', '--openapi', 'https://example.test/openapi.json', '--base-url', value]);
      expect(refused).toMatchObject({ code: 2, stderr: `armada tools: --base-url "${value}" is not an http(s) URL; give the service's URL, such as http://127.0.0.1:8080/v1\n` });
    }
    const withPassword = await cli(['add', 'z', '--editor', 'cursor', '--openapi', 'https://example.test/openapi.json', '--base-url', 'https://me:s3cret@api.example.test']);
    expect(withPassword.code).toBe(2);
    expect(withPassword.stderr).toMatch(/^armada tools: --base-url holds a user name or password/);
    expect(withPassword.stderr).not.toContain('s3cret');
    expect(readJson(file).mcpServers.z).toBeUndefined();

    const dry = await cli(['add', 'x', '--editor', 'vscode', '--scope', 'project', '--dry-run', '--', 'cmd']);
    expect(dry.code).toBe(0);
    // a file without secrets is printed as it would be written, without the line saying they are masked
    expect(dry.stdout).toBe(`# ${path.join(fs.realpathSync(cwd), '.vscode', 'mcp.json')}\n${JSON.stringify({ servers: { x: { type: 'stdio', command: 'cmd', args: [] } } }, null, 2)}\n`);
    expect(fs.existsSync(path.join(cwd, '.vscode'))).toBe(false);

    const list = await cli(['list']);
    expect(list.code).toBe(0);
    // the same for machines, as the help says
    const json = await cli(['list', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ editor: 'cursor', scope: 'user', file })]));
    expect((await cli(['--help'])).stdout).toContain('armada tools config list [--editor EDITOR] [--scope user|project] [--json]');
    expect(list.stdout).toContain(file);
    expect(list.stdout).toMatch(/existing: keep-me/);
    expect(list.stdout).toMatch(/fs: npx -y some-server --flag/);

    const rm = await cli(['remove', 'fs', '--editor', 'cursor']);
    expect(rm.code).toBe(0);
    expect(Object.keys(readJson(file).mcpServers).sort()).toEqual(['existing', 'local', 'petstore']);
    expect((await cli(['remove', 'fs', '--editor', 'cursor'])).code).toBe(1);
    fs.chmodSync(file, 0o444);
    const readOnly = await cli(['add', 'ro', '--editor', 'cursor', '--', 'cmd']);
    expect(readOnly).toMatchObject({ code: 2, stderr: `armada tools: ${file} is read-only; make it writable (chmod u+w ${file}) to change it\n` });
    fs.chmodSync(file, 0o600);
    // whatever the editor's files hold, list shows each server on one line and goes on
    fs.mkdirSync(path.join(home, '.gemini'));
    fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify({ mcpServers: { s: { command: 'c', args: 'notalist' }, n: 5, u: { url: 'https://mcp.example.test/sse' } } }));
    fs.mkdirSync(path.join(home, '.codeium', 'windsurf'), { recursive: true });
    fs.writeFileSync(path.join(home, '.codeium', 'windsurf', 'mcp_config.json'), JSON.stringify({ mcpServers: ['x'] }));
    const odd = await cli(['list']);
    expect(odd.code).toBe(0);
    expect(odd.stdout).toContain('  s: c\n  n: (no command)\n  u: https://mcp.example.test/sse\n');
    expect(odd.stdout).toContain(`windsurf (user): ${path.join(home, '.codeium', 'windsurf', 'mcp_config.json')} — "mcpServers" is not an object\n`);
    const bad = await cli(['add', 'y', '--editor', 'notepad', '--', 'cmd']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--editor: "notepad" is not one of/);
  }, 120_000);

  test('list shows keys and passwords as ***, in text and JSON; --show-secrets shows the file as it is', async () => {
    const file = path.join(home, '.cursor', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const servers = {
      api: { command: 'node', args: ['bin/armada', 'tools', 'openapi', 'https://me:pw-secret-1@docs.example.test/o.json', '--api-key', 'sk-secret-2', '--header', 'Authorization: Bearer tok-secret-3', '--api-key=sk-secret-4'], env: { OPENAPI_API_KEY: 'sk-secret-5', EMPTY: '' } },
      remote: { url: 'https://u:pw-secret-6@mcp.example.test/sse', headers: { 'X-Api-Key': 'sk-secret-7' } },
    };
    fs.writeFileSync(file, JSON.stringify({ mcpServers: servers }));
    const secrets = ['pw-secret-1', 'sk-secret-2', 'tok-secret-3', 'sk-secret-4', 'sk-secret-5', 'pw-secret-6', 'sk-secret-7'];
    const text = await cli(['list', '--editor', 'cursor']);
    const json = await cli(['list', '--editor', 'cursor', '--json']);
    for (const out of [text, json]) {
      expect(out.code).toBe(0);
      for (const secret of secrets) expect(out.stdout + out.stderr).not.toContain(secret);
    }
    expect(text.stdout).toContain('  api: node bin/armada tools openapi https://me:***@docs.example.test/o.json --api-key *** --header Authorization: *** --api-key=***\n');
    expect(text.stdout).toContain('  remote: https://u:***@mcp.example.test/sse\n');
    expect(JSON.parse(json.stdout)[0].servers).toEqual({
      api: { command: 'node', args: ['bin/armada', 'tools', 'openapi', 'https://me:***@docs.example.test/o.json', '--api-key', '***', '--header', 'Authorization: ***', '--api-key=***'], env: { OPENAPI_API_KEY: '***', EMPTY: '' } },
      remote: { url: 'https://u:***@mcp.example.test/sse', headers: { 'X-Api-Key': '***' } },
    });
    const whole = await cli(['list', '--editor', 'cursor', '--json', '--show-secrets']);
    expect(JSON.parse(whole.stdout)[0].servers).toEqual(servers);
    // the file itself is untouched
    expect(readJson(file).mcpServers).toEqual(servers);
  }, 60_000);

  test('add and remove --dry-run print the file with the secrets as ***, as list does; --show-secrets prints them', async () => {
    const file = path.join(home, '.cursor', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const text = '{\n  // kept\n  "mcpServers": {\n    "old": { "command": "srv", "args": ["--token", "tok-dry-old-1"], "env": { "K": "sk-dry-old-2" } },\n    "plain": { "command": "p", "args": [] }\n  }\n}\n';
    fs.writeFileSync(file, text);
    const typed = ['add', 'api', '--editor', 'cursor', '--openapi', 'https://docs.example.test/o.json', '--env', 'OPENAPI_API_KEY=sk-dry-new-3', '--dry-run'];
    const secrets = ['tok-dry-old-1', 'sk-dry-old-2', 'sk-dry-new-3'];
    const note = '# secret values (env and headers values, --api-key/--header values, URL passwords) are shown as ***; --show-secrets shows them\n';
    const dry = await cli(typed);
    expect(dry.code).toBe(0);
    for (const secret of secrets) expect(dry.stdout + dry.stderr).not.toContain(secret);
    expect(dry.stdout.startsWith(`# ${file}\n${note}{\n  // kept\n`)).toBe(true);
    const shown = parseJsonText(dry.stdout.split('\n').slice(2).join('\n'));
    expect(shown.ok && shown.data.mcpServers).toEqual({
      old: { command: 'srv', args: ['--token', '***'], env: { K: '***' } },
      plain: { command: 'p', args: [] },
      api: { command: process.execPath, args: [BIN, 'tools', 'openapi', 'https://docs.example.test/o.json'], env: { OPENAPI_API_KEY: '***' } },
    });
    const whole = await cli([...typed, '--show-secrets']);
    expect(whole.stdout.startsWith(`# ${file}\n{\n`)).toBe(true);
    for (const secret of secrets) expect(whole.stdout).toContain(secret);
    const removing = await cli(['remove', 'plain', '--editor', 'cursor', '--dry-run']);
    expect(removing.code).toBe(0);
    expect(removing.stdout).toContain(note);
    expect(removing.stdout).toContain('"K": "***"');
    for (const secret of secrets) expect(removing.stdout).not.toContain(secret);
    expect(fs.readFileSync(file, 'utf8')).toBe(text); // nothing was written
  }, 60_000);

  test('an mcp.json that is, or links to, a device or a socket: add and remove refuse in one line, exit 2, and leave it as it was', async () => {
    const dev = path.join(home, 'dev');
    fs.mkdirSync(dev);
    const nul = path.join(dev, 'mynull');
    mknod(nul, 3);
    const file = path.join(home, '.cursor', 'mcp.json');
    fs.mkdirSync(path.dirname(file));
    fs.symlinkSync(nul, file);
    const refusal = `armada tools: cannot write ${file}: it links to ${nul}, which is a character device, not a file; point the link at a file or remove the link\n`;
    expect(await cli(['add', 's1', '--editor', 'cursor', '--', 'echo', 'hi'])).toEqual({ code: 2, stdout: '', stderr: refusal });
    expect(await cli(['remove', 's1', '--editor', 'cursor'])).toEqual({ code: 2, stdout: '', stderr: refusal });
    expect(fs.statSync(nul).isCharacterDevice()).toBe(true);
    expect(fs.lstatSync(file).isSymbolicLink()).toBe(true);
    // no lock and no temp file beside the device
    expect(fs.readdirSync(dev)).toEqual(['mynull']);
    // a socket where the project's file should be: the same one line, not the open's raw ENXIO
    const project = path.join(fs.realpathSync(cwd), '.mcp.json');
    const server = await listenOn(project);
    try {
      expect(await cli(['add', 's1', '--editor', 'claude-code', '--scope', 'project', '--', 'echo'])).toEqual({
        code: 2,
        stdout: '',
        stderr: `armada tools: cannot write ${project}: it is a socket, not a file; move it away\n`,
      });
      expect(fs.statSync(project).isSocket()).toBe(true);
      expect(fs.readdirSync(cwd)).toEqual(['.mcp.json']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);

  test('a zero device, a FIFO or a file past the size limit as a config file: list shows why and goes on, add refuses; no abort, no hang, no lock left', async () => {
    const dev = path.join(home, 'dev');
    fs.mkdirSync(dev);
    const zero = path.join(dev, 'myzero');
    mknod(zero, 5);
    const cursor = path.join(home, '.cursor', 'mcp.json');
    fs.mkdirSync(path.dirname(cursor));
    fs.symlinkSync(zero, cursor);
    const claude = path.join(home, '.claude.json');
    fs.writeFileSync(claude, JSON.stringify({ mcpServers: { keep: { command: 'k', args: [] } } }));
    const big = path.join(home, '.codeium', 'windsurf', 'mcp_config.json');
    fs.mkdirSync(path.dirname(big), { recursive: true });
    fs.writeFileSync(big, '{}');
    fs.truncateSync(big, 64 * 1024 * 1024 + 1); // sparse: no disk used
    const fifo = path.join(home, '.gemini', 'settings.json');
    fs.mkdirSync(path.dirname(fifo));
    execFileSync('mkfifo', [fifo]);
    const zeroReason = `it links to ${zero}, which is a character device, not a file; point the link at a file or remove the link`;
    const bigReason = 'it is larger than 64 MiB (Armada reads at most that much of a config file); move it away or make it smaller';
    const fifoReason = 'it is a FIFO (named pipe), not a file; move it away';

    const list = await cli(['list']);
    expect(list).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        `cursor (user): ${cursor} — cannot read ${cursor}: ${zeroReason}`,
        `claude-code (user): ${claude}`,
        '  keep: k',
        `windsurf (user): ${big} — cannot read ${big}: ${bigReason}`,
        `gemini (user): ${fifo} — cannot read ${fifo}: ${fifoReason}`,
        '',
      ].join('\n'),
    });
    expect(await cli(['add', 's1', '--editor', 'cursor', '--', 'echo'])).toEqual({ code: 2, stdout: '', stderr: `armada tools: cannot write ${cursor}: ${zeroReason}\n` });
    expect(await cli(['add', 's1', '--editor', 'gemini', '--', 'echo'])).toEqual({ code: 2, stdout: '', stderr: `armada tools: cannot write ${fifo}: ${fifoReason}\n` });
    expect(await cli(['add', 's1', '--editor', 'gemini', '--dry-run', '--', 'echo'])).toEqual({ code: 2, stdout: '', stderr: `armada tools: cannot read ${fifo}: ${fifoReason}\n` });
    expect(await cli(['add', 's1', '--editor', 'windsurf', '--', 'echo'])).toEqual({ code: 2, stdout: '', stderr: `armada tools: cannot read ${big}: ${bigReason}\n` });
    // each left as it was, and no lock, temp file or backup beside it
    expect(fs.statSync(zero).isCharacterDevice()).toBe(true);
    expect(fs.statSync(fifo).isFIFO()).toBe(true);
    expect(fs.statSync(big).size).toBe(64 * 1024 * 1024 + 1);
    expect(fs.readdirSync(dev)).toEqual(['myzero']);
    expect(fs.readdirSync(path.dirname(fifo))).toEqual(['settings.json']);
    expect(fs.readdirSync(path.dirname(big))).toEqual(['mcp_config.json']);
  }, 240_000);
});
