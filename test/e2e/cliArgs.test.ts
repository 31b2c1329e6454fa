/**
 * The real `bin/armada` executable parses every command's options strictly: `--help`/`-h` prints that command's own
 * help and exits 0, an unknown option is one line naming it (exit 2); neither touches ARMADA_HOME or a database.
 * Without a command, or with an unknown one, it is a usage error (exit 2).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARMADA_BIN } from '../support/armadaProcess';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(300_000);

let home: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cli-args-'));
  // nothing may be started or migrated; were it, it would be this empty home on a free port, not the run's database
  env = { ...process.env, ARMADA_HOME: home, ARMADA_CONFIG: '', DATABASE_URL: '', TEMPORAL_ADDRESS: '', ARMADA_PG_PORT: String(await freePort()), ARMADA_LOG_LEVEL: 'warn' };
});
afterAll(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

function armada(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [ARMADA_BIN, ...args], { env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs `fn` over `items`, two at a time (the machine has two cores). */
async function twoAtATime<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += 2) results.push(...(await Promise.all(items.slice(i, i + 2).map(fn))));
  return results;
}

const COMMANDS = ['start', 'status', 'api', 'worker', 'bundle', 'migrate', 'infra'];

test('armada <command> --help (and -h) prints that command\'s help, exit 0, and touches nothing', async () => {
  const runs = await twoAtATime([...COMMANDS.map((c) => [c, '--help']), ['migrate', '-h']], async (args) => ({ args, ...(await armada(args)) }));
  for (const r of runs) {
    const command = r.args[0] as string;
    expect([r.args, r.code, r.stderr]).toEqual([r.args, 0, '']);
    expect(r.stdout).toMatch(new RegExp(`^Usage: armada ${command}\\b`, 'm'));
    expect(r.stdout).not.toContain('Commands:'); // its own help, not the list of all commands
  }
  expect(fs.readdirSync(home)).toEqual([]);
});

test('an unknown option is one line naming it, exit 2, and touches nothing', async () => {
  const commands = [...COMMANDS, 'sources list', 'workflows list', 'schedules list', 'tools serve'];
  const runs = await twoAtATime(commands, async (c) => ({ c, ...(await armada([...c.split(' '), '--any-bogus-flag'])) }));
  for (const r of runs) {
    const command = r.c.split(' ')[0];
    expect([r.c, r.code, r.stdout, r.stderr]).toEqual([r.c, 2, '', `armada ${command}: unknown option '--any-bogus-flag'; run armada ${command} --help\n`]);
  }
  const positional = await armada(['migrate', 'now']);
  expect([positional.code, positional.stderr]).toEqual([2, "armada migrate: unexpected argument 'now'; run armada migrate --help\n"]);
  const noOut = await armada(['bundle']);
  expect([noOut.code, noOut.stderr]).toEqual([2, 'armada bundle: --out FILE is required; run armada bundle --help\n']);
  expect(fs.readdirSync(home)).toEqual([]);
});

test('a usage error of a subcommand (sources, workflows, schedules, tools) is one line naming it and the help, exit 2', async () => {
  const cases: [string[], string][] = [
    [['sources', 'frob'], "armada sources: unknown subcommand 'frob'; run armada sources --help"],
    [['sources', 'health'], 'armada sources health: the SOURCE (id or name) is required; run armada sources --help'],
    [['sources', 'add', '--type', 'flow-builder'], 'armada sources add: --type and --url are required; run armada sources --help'],
    [['sources', 'update', 'fb'], 'armada sources update: give at least one of --name, --type, --url, --api-key, --status; run armada sources --help'],
    [['workflows', 'frob'], "armada workflows: unknown subcommand 'frob'; run armada workflows --help"],
    [['workflows', 'run'], 'armada workflows run: the workflow NAME is required; run armada workflows --help'],
    [['workflows', 'retry'], 'armada workflows retry: the EXECUTION_ID is required; run armada workflows --help'],
    [['schedules', 'frob'], "armada schedules: unknown subcommand 'frob'; run armada schedules --help"],
    [['schedules', 'add'], 'armada schedules add: the WORKFLOW is required; run armada schedules --help'],
    [['schedules', 'add', 'wf'], 'armada schedules add: give exactly one of --cron and --at; run armada schedules --help'],
    [['schedules', 'pause'], 'armada schedules pause: the schedule ID is required; run armada schedules --help'],
    [['tools', 'frob'], "armada tools: unknown subcommand 'frob'; run armada tools --help"],
    [['tools', 'config', 'frob'], "armada tools config: unknown action 'frob'; run armada tools --help"],
    [['tools', 'openapi'], 'armada tools openapi: give exactly one OpenAPI document URL or file; run armada tools --help'],
  ];
  const runs = await twoAtATime(cases, async ([args, line]) => ({ args, line, ...(await armada(args)) }));
  for (const r of runs) expect([r.args, r.code, r.stdout, r.stderr]).toEqual([r.args, 2, '', `${r.line}\n`]);
  // without a subcommand, like armada without a command: the command's help on stderr, exit 2
  const bare = await twoAtATime(['sources', 'workflows', 'schedules', 'tools', 'tools config'], async (c) => ({ c, ...(await armada(c.split(' '))) }));
  for (const r of bare) {
    expect([r.c, r.code, r.stdout]).toEqual([r.c, 2, '']);
    expect(r.stderr).toMatch(new RegExp(`^Usage:\\n  armada ${r.c.split(' ')[0]} `, 'm'));
  }
  expect(fs.readdirSync(home)).toEqual([]);
});

test('no command prints the help on stderr with exit 2; an unknown command is one line, exit 2', async () => {
  const none = await armada([]);
  expect([none.code, none.stdout]).toEqual([2, '']);
  expect(none.stderr).toContain('Usage: armada <command> [options]');
  const unknown = await armada(['strat']);
  expect([unknown.code, unknown.stdout, unknown.stderr]).toEqual([2, '', "armada: unknown command 'strat'; run armada --help\n"]);
  const help = await armada(['--help']);
  expect([help.code, help.stderr]).toEqual([0, '']);
  expect(help.stdout).toContain('Usage: armada <command> [options]');
  const helpMigrate = await armada(['help', 'migrate']);
  expect([helpMigrate.code, helpMigrate.stderr]).toEqual([0, '']);
  expect(helpMigrate.stdout).toMatch(/^Usage: armada migrate\b/m);
  expect(fs.readdirSync(home)).toEqual([]);
});

test('an argument a command does not take is one line naming it, exit 2, before anything is asked of a server', async () => {
  // no scheduler answers here: a command that went on would fail with "cannot reach the scheduler" (exit 1) instead
  const cases: [string[], string][] = [
    [['status', 'now'], "armada status: unexpected argument 'now'; run armada status --help"],
    [['help', 'start', 'now'], "armada help: unexpected argument 'now'; run armada help --help"],
    [['--version', 'now'], "armada --version: unexpected argument 'now'; run armada help --help"],
    [['-v', 'now'], "armada -v: unexpected argument 'now'; run armada help --help"],
    [['worker', 'q1'], "armada worker: unexpected argument 'q1'; run armada worker --help"],
    [['api', 'task'], "armada api: unexpected argument 'task'; run armada api --help"],
    [['sources', 'list', 'extra'], "armada sources list: unexpected argument 'extra'; run armada sources --help"],
    [['sources', 'add', 'fb', '--type', 'flow-builder', '--url', 'http://127.0.0.1:1'], "armada sources add: unexpected argument 'fb'; run armada sources --help"],
    [['sources', 'update', 'fb', 'extra', '--name', 'x'], "armada sources update: unexpected argument 'extra'; run armada sources --help"],
    [['sources', 'delete', 'fb', 'extra'], "armada sources delete: unexpected argument 'extra'; run armada sources --help"],
    [['sources', 'health', 'fb', 'extra'], "armada sources health: unexpected argument 'extra'; run armada sources --help"],
    [['sources', 'flows', 'fb', 'extra'], "armada sources flows: unexpected argument 'extra'; run armada sources --help"],
    [['workflows', 'list', 'extra'], "armada workflows list: unexpected argument 'extra'; run armada workflows --help"],
    [['workflows', 'run', 'wf', 'extra'], "armada workflows run: unexpected argument 'extra'; run armada workflows --help"],
    [['workflows', 'retry', 'e1', 'extra'], "armada workflows retry: unexpected argument 'extra'; run armada workflows --help"],
    [['schedules', 'list', 'extra'], "armada schedules list: unexpected argument 'extra'; run armada schedules --help"],
    [['schedules', 'add', 'wf', 'extra', '--at', 'now'], "armada schedules add: unexpected argument 'extra'; run armada schedules --help"],
    [['schedules', 'pause', 's1', 'extra'], "armada schedules pause: unexpected argument 'extra'; run armada schedules --help"],
    [['schedules', 'resume', 's1', 'extra'], "armada schedules resume: unexpected argument 'extra'; run armada schedules --help"],
    [['schedules', 'delete', 's1', 'extra'], "armada schedules delete: unexpected argument 'extra'; run armada schedules --help"],
    [['worktrees', 'prune', 'extra'], "armada worktrees prune: unexpected argument 'extra'; run armada worktrees --help"],
    [['tools', 'openapi', 'a.json', 'b.json'], "armada tools openapi: unexpected argument 'b.json'; run armada tools --help"],
    [['tools', 'config', 'list', 'extra'], "armada tools config list: unexpected argument 'extra'; run armada tools --help"],
    [['tools', 'config', 'remove', 'srv', 'extra', '--editor', 'cursor'], "armada tools config remove: unexpected argument 'extra'; run armada tools --help"],
    [['tools', 'config', 'add', 'srv', 'extra', '--editor', 'cursor', '--', 'cmd'], "armada tools config add: unexpected argument 'extra'; run armada tools --help"],
  ];
  const runs = await twoAtATime(cases, async ([args, line]) => ({ args, line, ...(await armada(args)) }));
  for (const r of runs) expect([r.args, r.code, r.stdout, r.stderr]).toEqual([r.args, 2, '', `${r.line}\n`]);
  expect(fs.readdirSync(home)).toEqual([]);
});

test('armada worktrees: its usage errors have the same one-line shape and exit 2 as the other commands', async () => {
  const cases: [string[], string][] = [
    [['worktrees', 'clean'], "armada worktrees: unknown subcommand 'clean'; run armada worktrees --help"],
    [['worktrees', 'prune', '--force'], "armada worktrees: unknown option '--force'; run armada worktrees --help"],
    [['worktrees', 'prune', '--dry-run=yes'], "armada worktrees: option '--dry-run' does not take an argument; run armada worktrees --help"],
  ];
  const runs = await twoAtATime(cases, async ([args, line]) => ({ args, line, ...(await armada(args)) }));
  for (const r of runs) expect([r.args, r.code, r.stdout, r.stderr]).toEqual([r.args, 2, '', `${r.line}\n`]);
  // without a subcommand, like sources and tools: the help on stderr, exit 2; --help: on stdout, exit 0
  const bare = await armada(['worktrees']);
  expect([bare.code, bare.stdout]).toEqual([2, '']);
  expect(bare.stderr).toMatch(/^Usage:\n {2}armada worktrees prune/m);
  const help = await armada(['worktrees', 'prune', '--help']);
  expect([help.code, help.stderr]).toEqual([0, '']);
  expect(help.stdout).toMatch(/^Usage:\n {2}armada worktrees prune/m);
  // a missing DATABASE_URL is the other commands' one line too: what is needed and where, exit 1
  const noDb = await armada(['worktrees', 'prune']);
  expect([noDb.code, noDb.stdout]).toEqual([1, '']);
  expect(noDb.stderr).toMatch(/^armada: DATABASE_URL is required for `armada worktrees prune` .*\n$/);
  expect(noDb.stderr.trim().split('\n')).toHaveLength(1);
  expect(fs.readdirSync(home)).toEqual([]);
});
