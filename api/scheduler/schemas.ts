/** Schemas of the scheduler's routes: bare JSON bodies, errors as `{detail}`. */
import { Type } from 'typebox';
import { MAX_PATH_PARAM_LENGTH, NAME_CONTROLS, NAME_PATTERN, NON_BLANK_PATTERN, nonBlankPatternWithout, TEXT_PATTERN } from '../http/inputPolicy';
import { AT_PATTERN, DATE_TIME_PATTERN, LATEST_RUN_AT } from '../../lib/scheduler/oneTime';
import { ACCEPTED_SCHEDULES, MAX_SCHEDULE_CHARS, SCHEDULE_EXPRESSION_PATTERN } from '../../lib/scheduler/cron';
import { ifThen, Nullable, Offset, StringEnum } from '../http/schemas';
import { PATTERN_MESSAGE } from '../http/validation';
import { LOG_LEVELS } from '../../lib/db/schedulerExecutions';

export const Detail = Type.Object({ detail: Type.String() });

/** The error answers a scheduler route may give. */
export const DetailErrors = { 400: Detail, 401: Detail, 404: Detail, 500: Detail, 503: Detail };
/** The answers of a route that calls a source's platform: its failure (502) or its timeout (504); api/scheduler/platformFailure.ts. */
export const PlatformErrors = { 502: Detail, 504: Detail };

export const SOURCE_TYPES = ['flow-builder', 'langflow', 'automagik-hive', 'automagik-agents'] as const;
export const SOURCE_STATUSES = ['active', 'inactive'] as const;

/**
 * 1–100 of `A-Z a-z 0-9 . _ -`, but not `.` or `..`: a name is a URL path segment, and those two are dot segments
 * every client resolves away (`/workflows/../schedules` is `/schedules`). Written without a lookahead, which
 * JSON Schema's portable regular expressions (and Go's) do not have.
 */
export const WORKFLOW_NAME = '^([A-Za-z0-9_-][A-Za-z0-9._-]{0,99}|\\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,98}|\\.\\.[A-Za-z0-9._-]{1,98})$';

/**
 * A platform's URL: http(s), with no user name or password before the host (`https://user:pass@host`). fetch refuses
 * such a URL, so every call to the platform failed with fetch's own words, and the URL, the password in it, was
 * stored and shown; the key goes in `api_key` (docs/scheduler.md#sources). No query or fragment either: every call is
 * the URL with its path put after it, so `https://host/?k=v` called `https://host/?k=v/health` (until session 53
 * taken, and every call to the platform failed).
 */
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: '^https?://[^\\s/?#@]+(/[^\\s?#]*)?$',
  description:
    "http(s) URL of the platform, without a user name or password (give the key in api_key) and without a query or fragment (every call puts its path after the URL, so a query's would be cut off by it: `?k=v/health`)",
  [PATTERN_MESSAGE]:
    'must be an http(s) URL without a user name or password before the host (such as https://langflow.example.com; give the key in api_key) and without a query (?) or fragment (#)',
});

/** The platform key travels in an HTTP header: printable ASCII only, else no request could carry it. */
const ApiKey = Type.String({ maxLength: 4096, pattern: '^[!-~]*$', description: 'printable ASCII, no spaces; empty or null: none' });

export const Source = Type.Object({
  id: Type.String(),
  name: Type.String(),
  source_type: StringEnum(SOURCE_TYPES),
  url: Type.String(),
  status: StringEnum(SOURCE_STATUSES),
  has_api_key: Type.Boolean(),
  version_info: Nullable(Type.Record(Type.String(), Type.Unknown())),
  last_health_check: Nullable(Type.String()),
  last_health_error: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const SourceList = Type.Object({
  items: Type.Array(Source),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
  has_more: Type.Boolean(),
});

export const SourceListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(SOURCE_STATUSES)),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    offset: Offset,
  },
  { additionalProperties: false },
);

/**
 * A source's name: not blank (only white space), like every name Armada stores; kept as sent otherwise (flow tasks
 * name a source by it, as written).
 */
// printed by `armada sources list`: no control or bidi characters, as project names (NAME_CONTROLS)
const SourceName = Type.String({ minLength: 1, maxLength: 200, pattern: nonBlankPatternWithout(NAME_CONTROLS), description: 'not blank (only white space); no control or bidi override characters' });

export const CreateSourceBody = Type.Object(
  {
    name: Type.Optional(SourceName),
    source_type: StringEnum(SOURCE_TYPES),
    url: Url,
    api_key: Type.Optional(Nullable(ApiKey)),
  },
  { additionalProperties: false },
);

export const PatchSourceBody = Type.Object(
  {
    name: Type.Optional(SourceName),
    source_type: Type.Optional(StringEnum(SOURCE_TYPES)),
    url: Type.Optional(Url),
    api_key: Type.Optional(Nullable(ApiKey)),
    status: Type.Optional(StringEnum(SOURCE_STATUSES)),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** PATCH /sources/{id}: `force` changes a source's platform even though it lacks flows the source's workflows run. */
export const PatchSourceQuery = Type.Object(
  {
    force: Type.Boolean({
      default: false,
      description:
        "true: change the source's url, source_type or api_key even when the platform it then names lacks flows the source's workflows run (a 409 without it); their runs fail until those flows exist there",
    }),
  },
  { additionalProperties: false },
);

export const SourceIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const DeletedSource = Type.Object({ id: Type.String(), deleted: Type.Boolean(), deleted_workflows: Type.Array(Type.String()) });

export const RemoteFlow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  endpoint_name: Nullable(Type.String()),
  description: Type.String(),
  updated_at: Nullable(Type.String()),
});

export const RemoteFlows = Type.Object({ source_id: Type.String(), flows: Type.Array(RemoteFlow) });

/** GET /flows: the flows of every source in one list; a source that cannot answer is reported, not fatal. */
export const AllRemoteFlows = Type.Object({
  flows: Type.Array(Type.Object({ source_id: Type.String(), source_name: Type.String(), source_type: StringEnum(SOURCE_TYPES), ...RemoteFlow.properties })),
  sources: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      source_type: StringEnum(SOURCE_TYPES),
      status: StringEnum(SOURCE_STATUSES),
      flows: Type.Integer({ description: 'how many flows the source listed' }),
      error: Nullable(Type.String({ description: 'why the flows of this source could not be listed' })),
    }),
  ),
});

export const SourceHealth = Type.Object({
  id: Type.String(),
  healthy: Type.Boolean(),
  status: StringEnum(SOURCE_STATUSES),
  error: Nullable(Type.String()),
  checked_at: Type.String(),
});

// not blank, one line: a task is named in its execution's tasks, its logs and its errors (`Task <name> failed: …`)
const TaskName = Type.String({ minLength: 1, maxLength: 200, pattern: NAME_PATTERN, description: 'unique within the workflow; not blank (only white space); no control or bidi override characters' });
const TaskTimeout = Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, description: 'seconds' }));

/** One schema for both task types (a union would answer a bad `type` with an opaque anyOf error); `if`/`then` says
 * which fields each type needs and which it must not have, so the document states the rule the service enforces. */
export const TaskSchema = Type.Object(
  {
    name: TaskName,
    type: StringEnum(['script', 'flow'] as const),
    script: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000, pattern: TEXT_PATTERN })),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NON_BLANK_PATTERN, description: 'source id or name (flow tasks); not blank' })),
    flow: Type.Optional(Type.String({ minLength: 1, maxLength: 500, pattern: NON_BLANK_PATTERN, description: "the flow's id, endpoint_name or display name (flow tasks), resolved once at creation; not blank" })),
    input: Type.Optional(Type.Unknown()),
    timeout: TaskTimeout,
  },
  {
    additionalProperties: false,
    allOf: [
      ifThen({ properties: { type: { const: 'script' } } }, { required: ['script'], properties: { source: false, flow: false } }),
      ifThen({ properties: { type: { const: 'flow' } } }, { required: ['source', 'flow'], properties: { script: false } }),
    ],
  },
);

/**
 * A schedule expression as a request gives it (docs/scheduler.md#schedule-expressions): the pattern is the accepted
 * form, which the routes check first with a 400 saying what is wrong (scheduleExpressionError), `@every`'s 1-second
 * floor and whole seconds included; the description says what no pattern can (values, zones, strings that never fire).
 * Answers show stored expressions as written, also older ones this would refuse.
 */
const cronString = (only = '') =>
  Type.String({
    minLength: 1,
    maxLength: MAX_SCHEDULE_CHARS,
    pattern: SCHEDULE_EXPRESSION_PATTERN,
    description:
      `${only}the schedule expression; ${ACCEPTED_SCHEDULES}. Also a 400: values out of range (minute 0-59, hour 0-23, day of the month 1-31, ` +
      'month 1-12 or names, day of the week 0-7, 0 and 7 Sunday, or names), a step of 0 or no whole number, a reversed range, Quartz\'s L and W, ' +
      'a CRON_TZ= zone other than "timezone", and a string that never fires in its zone up to 2100 (Temporal\'s last calendar ' +
      'year; a day no month has, or times a daylight-saving change skips on every day it names) (docs/scheduler.md#schedule-expressions)',
  });
const CronString = cronString();

export const CreateWorkflowBody = Type.Object(
  {
    name: Type.String({ pattern: WORKFLOW_NAME }),
    description: Type.Optional(Type.String({ maxLength: 10_000, pattern: TEXT_PATTERN })),
    schedule: Type.Optional(Nullable(CronString)),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    jitter: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'seconds of random delay added to each scheduled time' })),
    enabled: Type.Optional(Type.Boolean()),
    tasks: Type.Array(TaskSchema, { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const WorkflowTaskView = Type.Object({
  name: Type.String(),
  type: StringEnum(['script', 'flow'] as const),
  script: Type.Optional(Type.String()),
  source: Type.Optional(Type.String()),
  flow: Type.Optional(Type.String({ description: "the flow's id on the platform, resolved at creation" })),
  flowName: Type.Optional(Type.String({ description: "the flow's display name when it was resolved" })),
  input: Type.Optional(Type.Unknown()),
  timeout: Type.Optional(Type.Integer()),
});

export const Workflow = Type.Object({
  name: Type.String(),
  description: Type.String(),
  schedule: Nullable(Type.String()),
  timezone: Type.String(),
  jitter: Type.Integer(),
  enabled: Type.Boolean(),
  lastRun: Nullable(Type.String()),
  nextRun: Nullable(Type.String()),
  tasks: Type.Array(WorkflowTaskView),
  createdAt: Type.String(),
});

export const WorkflowList = Type.Object({ workflows: Type.Array(Workflow) });
export const CreatedWorkflow = Type.Object({ name: Type.String(), status: Type.Literal('created'), nextRun: Nullable(Type.String()) });
export const WorkflowParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: MAX_PATH_PARAM_LENGTH }) });
export const DeletedWorkflow = Type.Object({ name: Type.String(), deleted: Type.Boolean() });
export const RunResult = Type.Object({ executionId: Type.String(), workflow: Type.String(), status: Type.Literal('running'), startedAt: Type.String() });

export const SCHEDULE_TYPES = ['cron', 'one-time'] as const;
export const SCHEDULE_STATUSES = ['active', 'paused', 'completed', 'expired'] as const;

const ZoneName = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'IANA time zone as the tz database spells it (case-sensitive; links such as US/Pacific too), e.g. Asia/Kolkata; not an offset such as +05:00',
});
const Jitter = Type.Integer({ minimum: 0, maximum: 3600, description: 'seconds of random delay added to each scheduled time' });
const At = Type.String({
  pattern: AT_PATTERN,
  description: `now, or an ISO 8601 date-time in the future and at the latest ${LATEST_RUN_AT}; without Z or an offset it is a wall-clock time in \`timezone\``,
});
const RunInput = Type.Unknown({ description: "input of the runs it starts: flow tasks get it instead of their own input, scripts in ARMADA_INPUT; null = none" });

export const Schedule = Type.Object({
  id: Type.String(),
  workflow: Type.String(),
  type: StringEnum(SCHEDULE_TYPES),
  isDefault: Type.Boolean({ description: "the workflow's own schedule (its schedule/timezone fields and the /schedules/{workflow} routes)" }),
  schedule: Nullable(Type.String({ description: 'cron schedules: the cron expression as written' })),
  at: Nullable(Type.String({ description: 'one-time schedules: the time as written' })),
  runAt: Nullable(Type.String({ description: 'one-time schedules: the instant it runs (UTC)' })),
  timezone: Type.String(),
  jitter: Type.Integer(),
  input: RunInput,
  enabled: Type.Boolean(),
  status: StringEnum(SCHEDULE_STATUSES),
  nextRun: Nullable(Type.String()),
  lastRun: Nullable(Type.String()),
  createdAt: Type.String(),
});
export const ScheduleList = Type.Object({ schedules: Type.Array(Schedule) });
export const ScheduleParams = Type.Object({ workflow: Type.String({ minLength: 1, maxLength: MAX_PATH_PARAM_LENGTH }) });
export const PatchScheduleBody = Type.Object(
  {
    schedule: Type.Optional(CronString),
    timezone: Type.Optional(ZoneName),
    jitter: Type.Optional(Jitter),
    input: Type.Optional(RunInput),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const WorkflowScheduleParams = Type.Object({
  name: Type.String({ minLength: 1, maxLength: MAX_PATH_PARAM_LENGTH }),
  id: Type.String({ minLength: 1, maxLength: 200 }),
});

/** One schema for both types (like TaskSchema): `if`/`then` says what each type needs and must not have. */
export const CreateScheduleBody = Type.Object(
  {
    type: StringEnum(SCHEDULE_TYPES),
    schedule: Type.Optional(CronString),
    at: Type.Optional(At),
    timezone: Type.Optional(ZoneName),
    jitter: Type.Optional(Jitter),
    input: Type.Optional(RunInput),
    enabled: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    allOf: [
      ifThen({ properties: { type: { const: 'cron' } } }, { required: ['schedule'], properties: { at: false } }),
      ifThen({ properties: { type: { const: 'one-time' } } }, { required: ['at'], properties: { schedule: false, jitter: false } }),
      // `now` runs at creation: it cannot be created paused
      ifThen({ required: ['at'], properties: { at: { const: 'now' } } }, { properties: { enabled: { const: true } } }),
    ],
  },
);

export const PatchWorkflowScheduleBody = Type.Object(
  {
    schedule: Type.Optional(cronString('cron schedules only (409 otherwise): ')),
    at: Type.Optional(Type.String({ pattern: DATE_TIME_PATTERN, description: `one-time schedules only, before they ran (409 otherwise); in the future and at the latest ${LATEST_RUN_AT}` })),
    timezone: Type.Optional(ZoneName),
    jitter: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'cron schedules only (409 otherwise)' })),
    input: Type.Optional(RunInput),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const DeletedSchedule = Type.Object({ id: Type.String(), workflow: Type.String(), deleted: Type.Boolean() });

export const EXECUTION_STATUSES = ['running', 'completed', 'failed', 'stopped'] as const;

export const ExecutionSummary = Type.Object({
  id: Type.String(),
  workflow: Type.String(),
  status: StringEnum(EXECUTION_STATUSES),
  trigger: StringEnum(['manual', 'schedule'] as const),
  scheduledAt: Nullable(Type.String()),
  startedAt: Type.String(),
  completedAt: Nullable(Type.String()),
  duration: Nullable(Type.String()),
  error: Nullable(Type.String()),
  scheduleId: Nullable(Type.String({ description: 'the schedule that started it' })),
  retryOf: Nullable(Type.String({ description: 'the execution this one re-runs (POST /executions/{id}/retry)' })),
});

export const ExecutionTask = Type.Object({
  name: Type.String(),
  type: Type.String(),
  status: Type.String(),
  startedAt: Nullable(Type.String()),
  completedAt: Nullable(Type.String()),
  duration: Nullable(Type.String()),
  output: Type.String(),
  error: Nullable(Type.String()),
});

export const ExecutionDetail = Type.Object({
  ...ExecutionSummary.properties,
  input: Type.Unknown({ description: 'the input it ran with (null = none)' }),
  tasks: Type.Array(ExecutionTask),
});
export const ExecutionList = Type.Object({ executions: Type.Array(ExecutionSummary) });
export const ExecutionListQuery = Type.Object(
  {
    // not blank, like every name filter: no workflow is named only white space (WORKFLOW_NAME), so such a filter is a
    // client's mistake, not a question whose answer is an empty list
    workflow: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, pattern: NON_BLANK_PATTERN, description: "the workflow's name; not blank (only white space)" })),
    status: Type.Optional(StringEnum(EXECUTION_STATUSES)),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    offset: Offset,
  },
  { additionalProperties: false },
);
export const ExecutionParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
export const ExecutionLogs = Type.Object({
  executionId: Type.String(),
  logs: Type.Array(Type.Object({ timestamp: Type.String(), level: Type.String(), message: Type.String() })),
  total: Type.Integer({ minimum: 0, description: 'lines the execution has in all (with `level`, of that level and above): a page ends the log when offset + its lines reach it' }),
});
/**
 * The lines `GET /executions/{id}/logs` gives without `limit`: a page, not the whole log (a task's log keeps up to
 * 11,001 lines of up to 8 KiB, and an execution has up to 100 tasks); `total` tells a client there is more.
 */
export const DEFAULT_EXECUTION_LOG_PAGE = 1_000;
export const ExecutionLogsQuery = Type.Object(
  {
    offset: Offset,
    limit: Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: DEFAULT_EXECUTION_LOG_PAGE,
      description: `at most this many lines (default ${DEFAULT_EXECUTION_LOG_PAGE}): page with offset += limit until offset reaches total`,
    }),
    level: Type.Optional(StringEnum(LOG_LEVELS, { description: 'only lines of this level and above (debug < info < warning < error)' })),
  },
  { additionalProperties: false },
);
export const RetryResult = Type.Object({
  executionId: Type.String(),
  workflow: Type.String(),
  status: Type.Literal('running'),
  startedAt: Type.String(),
  retryOf: Type.String(),
});
export const StopResult = Type.Object({ executionId: Type.String(), status: StringEnum(EXECUTION_STATUSES) });
