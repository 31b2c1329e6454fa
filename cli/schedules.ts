/** `armada schedules list|add|pause|resume|delete`: the schedules of the scheduler's workflows over HTTP. */
import { parseSubcommandArgs, refuseExtraArguments, UsageError } from './options';
import { CliError, pathSegment, processIo, runSchedulerCommand, schedulerRequest, table, type CliIo } from './schedulerClient';

export const SCHEDULES_HELP = `armada schedules — the schedules of the scheduler's workflows (several per workflow)

Usage:
  armada schedules list [--workflow NAME] [--json]
  armada schedules add WORKFLOW --cron EXPR [--timezone ZONE] [--jitter SECONDS] [--input VALUE] [--paused] [--json]
  armada schedules add WORKFLOW --at now|DATETIME [--timezone ZONE] [--input VALUE] [--paused] [--json]
                        A cron schedule: EXPR is 5 fields "minute hour day-of-month month day-of-week"
                        (no seconds or year field), @hourly, @daily, @weekly, @monthly, @yearly, or
                        "@every DURATION" of whole seconds, at least 1s (@every 5m; no CRON_TZ= prefix: an
                        interval is the same in every zone); the scheduler refuses any other form
                        with a 400 saying why. Or a one-time schedule: now, or an ISO 8601 date-time
                        (2026-03-01T09:30 is a wall-clock time in --timezone, default UTC; Z or +05:30
                        name the instant). --input is JSON if it parses as JSON, else the text itself;
                        the runs of this schedule get it (flow tasks as their input, scripts in ARMADA_INPUT).
  armada schedules pause|resume|delete ID [--json]

Environment: ARMADA_SCHEDULER_URL (default: where armada start serves it, ARMADA_HOST and ARMADA_SCHEDULER_PORT,
http://127.0.0.1:8883), ARMADA_API_KEY or ARMADA_SCHEDULER_API_KEY (default: the key in $ARMADA_HOME/api-key).
See docs/scheduler.md#cli.
`;

interface ScheduleView {
  id: string;
  workflow: string;
  type: string;
  isDefault: boolean;
  schedule: string | null;
  at: string | null;
  timezone: string;
  input: unknown;
  status: string;
  nextRun: string | null;
}

/** The text of --input: JSON when it parses, else the string as given. */
function inputValue(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function findSchedule(env: NodeJS.ProcessEnv, id: string): Promise<ScheduleView> {
  const { schedules } = await schedulerRequest<{ schedules: ScheduleView[] }>(env, 'GET', '/api/v1/schedules', undefined, ['schedules']);
  const s = schedules.find((x) => x.id === id);
  if (!s) throw new CliError(`Schedule not found: ${id} (armada schedules list shows the ids)`);
  return s;
}

/** The arguments (positionals) each subcommand takes at most: the WORKFLOW, or the schedule ID. */
const ARGUMENTS: Record<string, number> = { list: 0, add: 1, pause: 1, resume: 1, delete: 1 };

export function runSchedules(argv: string[], io: CliIo = processIo()): Promise<number> {
  return runSchedulerCommand(SCHEDULES_HELP, argv, io, (sub, args) => schedules(sub, args, io));
}

async function schedules(sub: string, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseSubcommandArgs('schedules', args, {
    json: { type: 'boolean' },
    workflow: { type: 'string' },
    cron: { type: 'string' },
    at: { type: 'string' },
    timezone: { type: 'string' },
    jitter: { type: 'string' },
    input: { type: 'string' },
    paused: { type: 'boolean' },
  });
  if (Object.hasOwn(ARGUMENTS, sub)) refuseExtraArguments(`schedules ${sub}`, positionals, ARGUMENTS[sub] as number, 'schedules');
  const usage = (problem: string) => new UsageError(`schedules ${sub}`, problem, 'schedules');
  const show = (value: unknown, human: string) => io.stdout(values.json ? `${JSON.stringify(value, null, 2)}\n` : human);
  switch (sub) {
    case 'list': {
      const path = values.workflow ? `/api/v1/workflows/${pathSegment('workflow', values.workflow)}/schedules` : '/api/v1/schedules';
      const { schedules } = await schedulerRequest<{ schedules: ScheduleView[] }>(io.env, 'GET', path, undefined, ['schedules']);
      show(
        { schedules },
        table([
          ['ID', 'WORKFLOW', 'TYPE', 'WHEN', 'TIMEZONE', 'STATUS', 'NEXT RUN', 'INPUT'],
          ...schedules.map((s) => [
            s.id,
            s.workflow,
            s.isDefault ? `${s.type} (default)` : s.type,
            s.schedule ?? s.at ?? '-',
            s.timezone,
            s.status,
            s.nextRun ?? '-',
            s.input === null ? '-' : JSON.stringify(s.input),
          ]),
        ]),
      );
      return 0;
    }
    case 'add': {
      const workflow = positionals[0];
      if (!workflow) throw usage('the WORKFLOW is required');
      if ((values.cron === undefined) === (values.at === undefined)) throw usage('give exactly one of --cron and --at');
      if (values.jitter !== undefined && !/^\d+$/.test(values.jitter)) throw usage('--jitter takes whole seconds');
      const body = {
        type: values.cron !== undefined ? 'cron' : 'one-time',
        ...(values.cron !== undefined ? { schedule: values.cron } : { at: values.at }),
        ...(values.timezone !== undefined ? { timezone: values.timezone } : {}),
        ...(values.jitter !== undefined ? { jitter: Number(values.jitter) } : {}),
        ...(values.input !== undefined ? { input: inputValue(values.input) } : {}),
        ...(values.paused ? { enabled: false } : {}),
      };
      const s = await schedulerRequest<ScheduleView>(io.env, 'POST', `/api/v1/workflows/${pathSegment('workflow', workflow)}/schedules`, body);
      show(s, `added ${s.type} schedule ${s.id} to ${s.workflow}${s.nextRun ? `; next run ${s.nextRun}` : ''}\n`);
      return 0;
    }
    case 'pause':
    case 'resume':
    case 'delete': {
      const id = positionals[0];
      if (!id) throw usage('the schedule ID is required');
      const s = await findSchedule(io.env, id);
      const base = `/api/v1/workflows/${pathSegment('workflow', s.workflow)}/schedules/${pathSegment('schedule', s.id)}`;
      const result =
        sub === 'delete'
          ? await schedulerRequest<unknown>(io.env, 'DELETE', base)
          : await schedulerRequest<ScheduleView>(io.env, 'POST', `${base}/${sub}`);
      show(result, `${sub === 'delete' ? 'deleted' : `${sub}d`} schedule ${s.id} of ${s.workflow}\n`);
      return 0;
    }
    default:
      throw new UsageError('schedules', `unknown subcommand '${sub}'`);
  }
}
