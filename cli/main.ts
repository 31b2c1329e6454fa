/** The `armada` command line: start, status, api, worker, migrate, worktrees (and infra, for tests and local tooling). */
import { parseArgs } from 'node:util';
import { ConfigError } from '../lib/config';
import { EmbeddedPostgresError } from '../lib/runtime/embeddedPostgres';
import { ArmadaHomeInUse } from '../lib/runtime/homeInUse';
import { TemporalCliProvisionError } from '../lib/runtime/provisionTemporalCli';
import { TemporalCliMissing } from '../lib/runtime/temporalDevServer';
import { SearchAttributesMissing } from '../lib/temporal/searchAttributeCheck';

export const HELP = `armada — job orchestration on Temporal

Usage: armada <command> [options]

Commands:
  start                 Run everything on one machine: embedded PostgreSQL (unless DATABASE_URL),
                        a Temporal dev server (unless TEMPORAL_ADDRESS), migrations, the four HTTP
                        services and one worker. Ctrl-C stops all of it. A missing Temporal CLI is
                        provisioned once into ARMADA_TOOLS_DIR (default $ARMADA_HOME/tools).
  status [--json]       What runs on this ARMADA_HOME: services and ports, worker queues, PostgreSQL
                        and Temporal state, versions, data directory size.
  api [--service S]...  Run HTTP services only (S: task, scheduler, agents, traces; default all).
                        Needs DATABASE_URL and TEMPORAL_ADDRESS (default 127.0.0.1:7233).
  worker [--queue Q]... [--concurrency N] [--max-agents N] [--health-port N] [--grace S] [--identity ID]
                        Run a Temporal worker (default queues: the shared queue and this host's queue).
                        --health-port serves /health, /metrics and POST /drain; SIGTERM or /drain stops
                        polling and gives running activities S seconds (default 30) to finish.
                        --concurrency N: short activities at once (default 20); --max-agents caps the
                        agent processes this worker runs at once (default: up to 250 agent runs).
  bundle --out FILE     Prebuild the workflow bundle for production workers (ARMADA_WORKFLOW_BUNDLE=FILE).
  migrate               Apply database migrations (DATABASE_URL, or the embedded server of ARMADA_HOME).
  worktrees prune [--dry-run]
                        Remove this host's worktrees (and managed branches) of attempts that no longer
                        exist, printing each as a JSON line; workers do it every attempts.janitorIntervalMs.
  sources list|add|update|delete|health|flows
                        The scheduler's sources over HTTP (armada sources --help).
  workflows list|run|retry
                        The scheduler's workflows over HTTP (armada workflows --help).
  schedules list|add|pause|resume|delete
                        The schedules of the scheduler's workflows over HTTP (armada schedules --help).
  infra [--home DIR] [--pg-port N] [--temporal-port N] [--bundle FILE] [--until-stdin-closes]
                        Start only the embedded PostgreSQL and Temporal dev server, print their
                        addresses as one JSON line and run until stopped (tests and local tooling).
  tools <openapi|serve|config> ...
                        MCP tool servers for code editors and their config files (armada tools --help).

Options:
  -h, --help            Show this help.
  -v, --version         Show the version.

Environment: ARMADA_HOME, ARMADA_CONFIG, DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_CLI_PATH, ARMADA_TOOLS_DIR, ARMADA_HOST, ARMADA_*_PORT, ARMADA_API_KEY, ARMADA_LOG_LEVEL,
ARMADA_LOG_FORMAT (see README.md).
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(HELP);
        return 0;
      case '-v':
      case '--version': {
        const { loadConfig } = require('../lib/config') as typeof import('../lib/config');
        process.stdout.write(`${loadConfig().version}\n`);
        return 0;
      }
      case 'start': {
        const { runStart } = require('./start') as typeof import('./start');
        return await runStart(parseArgs({ args: rest, options: {} }).values);
      }
      case 'status': {
        const { values } = parseArgs({ args: rest, options: { json: { type: 'boolean' } } });
        const { runStatus } = require('./status') as typeof import('./status');
        return await runStatus({ json: values.json });
      }
      case 'api': {
        const { values } = parseArgs({ args: rest, options: { service: { type: 'string', multiple: true } } });
        const { runApi } = require('./api') as typeof import('./api');
        return await runApi(values.service ?? []);
      }
      case 'worker': {
        const { values } = parseArgs({
          args: rest,
          options: {
            queue: { type: 'string', multiple: true },
            concurrency: { type: 'string' },
            'health-port': { type: 'string' },
            grace: { type: 'string' },
            identity: { type: 'string' },
            'max-agents': { type: 'string' },
          },
        });
        const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
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
        const { values } = parseArgs({ args: rest, options: { out: { type: 'string' } } });
        if (!values.out) throw new ConfigError('bundle: --out FILE is required');
        const { writeWorkflowBundle } = require('../workers/createWorker') as typeof import('../workers/createWorker');
        await writeWorkflowBundle(values.out);
        process.stdout.write(`workflow bundle written to ${values.out}\n`);
        return 0;
      }
      case 'migrate': {
        const { runMigrate } = require('./migrate') as typeof import('./migrate');
        return await runMigrate();
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
        const { values } = parseArgs({
          args: rest,
          options: {
            home: { type: 'string' },
            'pg-port': { type: 'string' },
            'temporal-port': { type: 'string' },
            bundle: { type: 'string' },
            'until-stdin-closes': { type: 'boolean' },
          },
        });
        const { runInfra } = require('./infra') as typeof import('./infra');
        return await runInfra({
          home: values.home,
          pgPort: values['pg-port'] ? Number(values['pg-port']) : undefined,
          temporalPort: values['temporal-port'] ? Number(values['temporal-port']) : undefined,
          bundle: values.bundle,
          untilStdinCloses: values['until-stdin-closes'],
        });
      }
      case 'tools': {
        const { runTools } = require('./tools') as typeof import('./tools');
        return await runTools(rest);
      }
      default:
        process.stderr.write(`armada: unknown command "${command}"\n\n${HELP}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof TemporalCliMissing || err instanceof TemporalCliProvisionError || err instanceof ConfigError || err instanceof EmbeddedPostgresError || err instanceof ArmadaHomeInUse || err instanceof SearchAttributesMissing) {
      process.stderr.write(`armada: ${err.message}\n`);
      return 1;
    }
    // `code` is not always a string (a fetch TimeoutError, a DOMException, has the number 23)
    const code = (err as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`armada: ${(err as Error).message}\n\n${HELP}`);
      return 2;
    }
    throw err;
  }
}
