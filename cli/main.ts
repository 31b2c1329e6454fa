/** The `armada` command line: start, status, api, worker, migrate, worktrees (and infra, for tests and local tooling). */
import { OperatorError } from '../lib/errors';
import { COMMAND_HELP, HELP, type HelpedCommand } from './help';
import { isParseArgsError, parseArgsProblem, parseCommandOptions, refuseExtraArguments, UsageError } from './options';

export { HELP } from './help';

/** Refuses too low an open-file limit for `command` (loaded only by the commands that check it: it reads the config). */
function requireOpenFileLimit(command: 'start' | 'worker'): void {
  (require('../lib/runtime/openFileLimit') as typeof import('../lib/runtime/openFileLimit')).requireOpenFileLimit(command);
}

/** Prints `command`'s own help. */
function printHelp(command: HelpedCommand): number {
  process.stdout.write(COMMAND_HELP[command]);
  return 0;
}

/**
 * `armada infra`'s `--pg-port`/`--temporal-port`: a port number (0–65535), else a usage error naming the flag; Number()
 * of `abc` was NaN, handed on to the embedded servers as their port. Empty or absent: undefined (the configured port).
 */
function infraPort(flag: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65_535) throw new UsageError('infra', `${flag} must be a port number from 0 to 65535, not "${value}"`);
  return n;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined: // a usage error: the list of commands, on stderr
        process.stderr.write(HELP);
        return 2;
      case '-h':
      case '--help':
        process.stdout.write(HELP);
        return 0;
      case 'help': {
        const about = rest[0];
        refuseExtraArguments('help', rest, 1);
        if (about !== undefined && Object.hasOwn(COMMAND_HELP, about)) return printHelp(about as HelpedCommand);
        if (about !== undefined && ['sources', 'workflows', 'schedules', 'worktrees', 'tools'].includes(about)) return main([about, '--help']);
        if (about !== undefined) return main([about]); // an unknown command: its one line
        process.stdout.write(HELP);
        return 0;
      }
      case '-v':
      case '--version': {
        refuseExtraArguments(command, rest, 0, 'help');
        const { loadConfig } = require('../lib/config') as typeof import('../lib/config');
        process.stdout.write(`${loadConfig().version}\n`);
        return 0;
      }
      case 'start': {
        const values = parseCommandOptions('start', rest, {});
        if (!values) return printHelp('start');
        requireOpenFileLimit('start'); // before its modules load: too low a limit fails there, or later natively
        const { runStart } = require('./start') as typeof import('./start');
        return await runStart(values);
      }
      case 'status': {
        const values = parseCommandOptions('status', rest, { json: { type: 'boolean' } });
        if (!values) return printHelp('status');
        const { runStatus } = require('./status') as typeof import('./status');
        return await runStatus({ json: values.json });
      }
      case 'api': {
        const values = parseCommandOptions('api', rest, { service: { type: 'string', multiple: true } });
        if (!values) return printHelp('api');
        const { runApi } = require('./api') as typeof import('./api');
        return await runApi(values.service ?? []);
      }
      case 'worker': {
        const values = parseCommandOptions('worker', rest, {
          queue: { type: 'string', multiple: true },
          concurrency: { type: 'string' },
          'health-port': { type: 'string' },
          grace: { type: 'string' },
          identity: { type: 'string' },
          'max-agents': { type: 'string' },
        });
        if (!values) return printHelp('worker');
        const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
        requireOpenFileLimit('worker');
        const { runWorker } = require('./worker') as typeof import('./worker');
        return await runWorker({
          queues: values.queue,
          concurrency: num(values.concurrency),
          healthPort: num(values['health-port'] ?? process.env.ARMADA_WORKER_PORT),
          graceSeconds: num(values.grace ?? process.env.ARMADA_WORKER_GRACE_SECONDS),
          identity: values.identity,
          maxAgents: num(values['max-agents'] ?? process.env.ARMADA_WORKER_MAX_AGENTS),
        });
      }
      case 'bundle': {
        const values = parseCommandOptions('bundle', rest, { out: { type: 'string' } });
        if (!values) return printHelp('bundle');
        if (!values.out) throw new UsageError('bundle', '--out FILE is required');
        const { writeWorkflowBundle } = require('../workers/createWorker') as typeof import('../workers/createWorker');
        await writeWorkflowBundle(values.out);
        process.stdout.write(`workflow bundle written to ${values.out}\n`);
        return 0;
      }
      case 'migrate': {
        const values = parseCommandOptions('migrate', rest, { json: { type: 'boolean' } });
        if (!values) return printHelp('migrate');
        const { runMigrate } = require('./migrate') as typeof import('./migrate');
        return await runMigrate({ json: values.json });
      }
      case 'worktrees': {
        const { runWorktrees } = require('./worktrees') as typeof import('./worktrees');
        return await runWorktrees(rest);
      }
      case 'sources': {
        const { runSources } = require('./sources') as typeof import('./sources');
        return await runSources(rest);
      }
      case 'workflows': {
        const { runWorkflows } = require('./workflows') as typeof import('./workflows');
        return await runWorkflows(rest);
      }
      case 'schedules': {
        const { runSchedules } = require('./schedules') as typeof import('./schedules');
        return await runSchedules(rest);
      }
      case 'infra': {
        const values = parseCommandOptions('infra', rest, {
          home: { type: 'string' },
          'pg-port': { type: 'string' },
          'temporal-port': { type: 'string' },
          bundle: { type: 'string' },
          'until-stdin-closes': { type: 'boolean' },
          'show-secrets': { type: 'boolean' },
        });
        if (!values) return printHelp('infra');
        const { runInfra } = require('./infra') as typeof import('./infra');
        return await runInfra({
          home: values.home,
          pgPort: infraPort('--pg-port', values['pg-port']),
          temporalPort: infraPort('--temporal-port', values['temporal-port']),
          bundle: values.bundle,
          untilStdinCloses: values['until-stdin-closes'],
          showSecrets: values['show-secrets'],
        });
      }
      case 'tools': {
        const { runTools } = require('./tools') as typeof import('./tools');
        return await runTools(rest);
      }
      default:
        process.stderr.write(`armada: unknown ${command.startsWith('-') ? 'option' : 'command'} '${command}'; run armada --help\n`);
        return 2;
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    // any other parseArgs error (the commands with subcommands turn theirs into a UsageError): the same one line
    if (isParseArgsError(err)) {
      process.stderr.write(`${new UsageError(command as string, parseArgsProblem(err)).message}\n`);
      return 2;
    }
    if (err instanceof OperatorError) {
      process.stderr.write(`armada: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
