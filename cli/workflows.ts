/** `armada workflows list|run|retry|logs`: the scheduler's workflows and their executions over HTTP. */
import { parseSubcommandArgs, refuseExtraArguments, UsageError } from './options';
import { pathSegment, processIo, runSchedulerCommand, schedulerRequest, table, type CliIo } from './schedulerClient';

export const WORKFLOWS_HELP = `armada workflows — list and run the scheduler's workflows

Usage:
  armada workflows list [--json]
  armada workflows run NAME [--wait] [--json]
                        Starts a run and prints its execution id at once; --wait follows it to the end
                        and exits 0 only when it completed.
  armada workflows retry EXECUTION_ID [--wait] [--json]
                        Re-runs a finished execution: a new execution of the same workflow with the same
                        input, linked to the original (retryOf); --wait as for run.
  armada workflows logs EXECUTION_ID [--level debug|info|warning|error] [--json]
                        Prints the execution's log, every line, oldest first (read in pages of 10,000);
                        --level keeps that level and above; --json prints one JSON object per line.

Schedules (several per workflow, cron or one-time): armada schedules --help.

Environment: ARMADA_SCHEDULER_URL (default: where armada start serves it, ARMADA_HOST and ARMADA_SCHEDULER_PORT,
http://127.0.0.1:8883), ARMADA_API_KEY or ARMADA_SCHEDULER_API_KEY (default: the key in $ARMADA_HOME/api-key).
See docs/scheduler.md#cli.
`;

interface WorkflowView {
  name: string;
  schedule: string | null;
  timezone: string;
  enabled: boolean;
  lastRun: string | null;
  nextRun: string | null;
  tasks: unknown[];
}

interface StartedRun {
  executionId: string;
  workflow: string;
  status: string;
  retryOf?: string;
}

/** The arguments (positionals) each subcommand takes at most: the workflow NAME or the EXECUTION_ID. */
const ARGUMENTS: Record<string, number> = { list: 0, run: 1, retry: 1, logs: 1 };
// lib/db/schedulerExecutions.ts' LOG_LEVELS, not imported: this command loads no database module
const LOG_LEVELS = ['debug', 'info', 'warning', 'error'];
/** The largest page `GET /executions/{id}/logs` gives. */
const LOG_PAGE = 10_000;

export function runWorkflows(argv: string[], io: CliIo = processIo()): Promise<number> {
  return runSchedulerCommand(WORKFLOWS_HELP, argv, io, (sub, args) => workflows(sub, args, io));
}

async function workflows(sub: string, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseSubcommandArgs('workflows', args, { json: { type: 'boolean' }, wait: { type: 'boolean' }, level: { type: 'string' } });
  if (Object.hasOwn(ARGUMENTS, sub)) refuseExtraArguments(`workflows ${sub}`, positionals, ARGUMENTS[sub] as number, 'workflows');
  const usage = (problem: string) => new UsageError(`workflows ${sub}`, problem, 'workflows');
  if (values.level !== undefined && sub !== 'logs') throw usage('--level is an option of armada workflows logs');
  const show = (value: unknown, human: string) => io.stdout(values.json ? `${JSON.stringify(value, null, 2)}\n` : human);
  switch (sub) {
    case 'list': {
      const { workflows } = await schedulerRequest<{ workflows: WorkflowView[] }>(io.env, 'GET', '/api/v1/workflows', undefined, ['workflows']);
      show(
        { workflows },
        table([
          ['NAME', 'SCHEDULE', 'TIMEZONE', 'ENABLED', 'TASKS', 'LAST RUN', 'NEXT RUN'],
          ...workflows.map((w) => [w.name, w.schedule ?? '-', w.timezone, String(w.enabled), String(w.tasks.length), w.lastRun ?? '-', w.nextRun ?? '-']),
        ]),
      );
      return 0;
    }
    case 'run':
    case 'retry': {
      const target = positionals[0];
      if (!target) throw usage(`the ${sub === 'run' ? 'workflow NAME' : 'EXECUTION_ID'} is required`);
      const run =
        sub === 'run'
          ? await schedulerRequest<StartedRun>(io.env, 'POST', `/api/v1/workflows/${pathSegment('workflow', target)}/run`)
          : await schedulerRequest<StartedRun>(io.env, 'POST', `/api/v1/executions/${pathSegment('execution', target)}/retry`);
      const what = `execution ${run.executionId} of ${run.workflow}${run.retryOf ? ` (retry of ${run.retryOf})` : ''}`;
      if (!values.wait) {
        show(run, `started ${what}\n`);
        return 0;
      }
      let e: { status: string; duration: string | null; error: string | null };
      for (;;) {
        e = await schedulerRequest(io.env, 'GET', `/api/v1/executions/${run.executionId}`);
        if (e.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 500));
      }
      show(e, `${what}: ${e.status}${e.duration ? ` in ${e.duration}` : ''}${e.error ? ` (${e.error})` : ''}\n`);
      return e.status === 'completed' ? 0 : 1;
    }
    case 'logs': {
      const target = positionals[0];
      if (!target) throw usage('the EXECUTION_ID is required');
      if (values.level !== undefined && !LOG_LEVELS.includes(values.level)) throw usage(`--level must be one of ${LOG_LEVELS.join(', ')}`);
      const base = `/api/v1/executions/${pathSegment('execution', target)}/logs?limit=${LOG_PAGE}${values.level ? `&level=${values.level}` : ''}`;
      // page by page, each printed before the next is asked for: a long log neither waits nor sits in memory whole.
      // A running execution's log grows meanwhile; its lines are appended, so the offsets stay valid.
      for (let offset = 0; ; ) {
        const page = await schedulerRequest<{ logs: { timestamp: string; level: string; message: string }[]; total: number }>(io.env, 'GET', `${base}&offset=${offset}`, undefined, ['logs']);
        io.stdout(page.logs.map((l) => (values.json ? JSON.stringify(l) : `${l.timestamp} ${l.level.toUpperCase().padEnd(7)} ${l.message}`)).join('\n') + (page.logs.length ? '\n' : ''));
        offset += page.logs.length;
        if (page.logs.length < LOG_PAGE || offset >= page.total) return 0;
      }
    }
    default:
      throw new UsageError('workflows', `unknown subcommand '${sub}'`);
  }
}
