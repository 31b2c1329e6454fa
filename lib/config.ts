/**
 * The one place for configuration: environment variables plus the JSON config file ($ARMADA_CONFIG).
 * Everything else receives an `ArmadaConfig`; nothing reads process.env on its own.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import Ajv from 'ajv';
import { AGENT_OUTPUT_FORMATS } from './agents/outputFormats';
import { MAX_AGENT_TASK_TIMEOUT_MS } from './agents/agentTaskTimeout';
import { localUrl } from './hostAddress';
import { ConfigError } from './errors';
import { FileTooLargeError, NotAFileError, readRegularFile } from './fs/regularFile';

/**
 * The longest delay a Node timer (setTimeout, setInterval, AbortSignal.timeout) keeps, and the longest of PostgreSQL's
 * `*_timeout` settings: 2^31 - 1 ms, about 24.8 days. Node runs a longer timer after 1 ms (and AbortSignal.timeout
 * refuses above 2^32 - 1), so a setting beyond it would have meant its opposite; such settings are bounded by it.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The longest duration of the settings only Temporal acts on (an activity's heartbeat timeout, an attempt workflow's
 * idle timeout, a pull request watch's poll interval, a Schedule's catch-up window and interval): 365 days. Temporal
 * takes them as protobuf Durations (at most 315 576 000 000 s, 10 000 years; the SDK sends a larger number unchecked),
 * so no Node timer bounds them; a longer value is a mistake (a unit, a digit too many) and is refused at start naming
 * the key, rather than handed to Temporal by every start of a workflow or Schedule.
 */
export const MAX_TEMPORAL_DURATION_MS = 365 * 86_400_000;

/**
 * The longest `scheduler.retentionDays`: 100 years. Pruning deletes what finished before now minus it, so a cutoff
 * stays in the 20th century, well inside what a JavaScript Date and a PostgreSQL timestamp hold (without a bound, a
 * large value put it before 4713 BC, PostgreSQL's first timestamp, or made it an Invalid Date: no cutoff to prune by).
 */
export const MAX_RETENTION_DAYS = 36_500;

/** The largest config file read: a real one is a few kilobytes; /dev/zero or a huge file is refused, not read whole. */
export const CONFIG_FILE_MAX_BYTES = 1024 * 1024;

/** The longest multi-agent name: the API's path and body schemas take no longer one (api/agents/schemas.ts). */
export const AGENT_NAME_MAX_LENGTH = 200;

const AgentProfileSchema = Type.Object(
  {
    command: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    /** which parser reads the agent's output; a typo used to fall back to plain text without a word */
    format: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [...AGENT_OUTPUT_FORMATS] })),
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
    model: Type.Optional(Type.String()),
    maxConcurrent: Type.Optional(Type.Integer({ minimum: 1 })),
    resumeArgs: Type.Optional(Type.Array(Type.String())),
    prices: Type.Optional(
      Type.Object({ inputPerMTok: Type.Number({ minimum: 0 }), outputPerMTok: Type.Number({ minimum: 0 }) }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
);

export const FileConfigSchema = Type.Object(
  {
    // git's rules for what starts a branch name (lib/git.ts BRANCH_NAME_PATTERN): no leading `-`, no component starting
    // with `.` or ending with `.lock`, no `..`, not ending with `.`
    branchPrefix: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^(?!-)(?!(?:.*/)?\\.)(?!.*\\.\\.)(?!.*\\.lock(?:/|$))(?!.*\\.$)[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$' })),
    agents: Type.Optional(Type.Record(Type.String({ minLength: 1 }), AgentProfileSchema)),
    filesystem: Type.Optional(
      Type.Object(
        {
          allowedPaths: Type.Optional(Type.Array(Type.String())),
          blockedPaths: Type.Optional(Type.Array(Type.String())),
          /** wall-clock budget of one repository discovery or recursive listing, walk and inspection (default 10 s) */
          walkTimeBudgetMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
          /** directory entries one repository discovery reads before it stops with truncated: true (default 50,000) */
          walkMaxEntries: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
          /** discoveries and recursive listings running at once in one task service (default 2) */
          concurrentWalks: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
          /** walks waiting for a turn; one more is answered 503 BUSY at once (default 16) */
          queuedWalks: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    users: Type.Optional(
      Type.Array(
        Type.Object(
          {
            email: Type.String({ minLength: 3 }),
            apiKey: Type.String({ minLength: 8 }),
            /** X-User-Email may name another user with this key (a trusted front end); docs/security.md#key-rules */
            admin: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    multiAgent: Type.Optional(
      Type.Object(
        {
          agents: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  name: Type.String({ minLength: 1, maxLength: AGENT_NAME_MAX_LENGTH, pattern: '^[A-Za-z0-9._-]+$' }),
                  role: Type.Optional(Type.String()),
                  llm: Type.String({ minLength: 1 }),
                  memory: Type.Optional(Type.Boolean()),
                  tools: Type.Optional(Type.Array(Type.String())),
                },
                { additionalProperties: false },
              ),
            ),
          ),
          /** An agent's actor continues-as-new after this many finished tasks (default 100). */
          continueAsNewEvery: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
          /**
           * A task's process is stopped after this long and the task fails (default 30 minutes); at most what its
           * activity's 24 h start-to-close timeout leaves (lib/agents/agentTaskTimeout.ts).
           */
          taskTimeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: MAX_AGENT_TASK_TIMEOUT_MS })),
          /** How many memory hits are prepended to the prompt of an agent with `memory: true` (default 3). */
          memoryHits: Type.Optional(Type.Integer({ minimum: 0, maximum: 50 })),
          /** How often the agents service looks for tasks whose actor was closed under them (default 3 s). */
          actorCheckIntervalMs: Type.Optional(Type.Integer({ minimum: 500, maximum: 600_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    approvals: Type.Optional(
      Type.Object(
        {
          /**
           * how long a response or cancel waits for a worker to take and apply its update before answering 503 with an
           * unknown outcome (default 15 s; docs/approvals.md#no-worker)
           */
          workerWaitMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    attempts: Type.Optional(
      Type.Object(
        {
          /** runAgent heartbeat timeout: how soon a dead worker's agent run is noticed and retried */
          heartbeatTimeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: MAX_TEMPORAL_DURATION_MS })),
          /** an attempt workflow with nothing to do closes after this long (default 24 h) */
          idleTimeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: MAX_TEMPORAL_DURATION_MS })),
          /** how long a start waits for Temporal to start the attempt's workflow before undoing it with 503 (default 20 s) */
          startTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
          /** how long a start may stay pending (process died before confirming) before the reconciler finishes it (default 60 s) */
          startReconcileAfterMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000 })),
          /**
           * how long after its workflow closed (terminated from Temporal's side) an attempt still `running`, or an
           * approval still `pending`, is recorded cancelled by the task API's closed-workflow reconciler (default 60 s)
           */
          closedWorkflowGraceMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400_000 })),
          /** an attempt workflow continues-as-new after this many follow-ups (default: only when Temporal suggests it) */
          continueAsNewEvery: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
          /** SIGTERM → SIGKILL grace when an agent is stopped */
          killGraceMs: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_TIMER_MS })),
          /** default bound of one agent run in seconds when options.timeout is absent (default 3600); at most 30 days, as options.timeout (api/task/attemptSchemas.ts) */
          defaultTimeoutSec: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_592_000 })),
          /**
           * where the API reads an attempt's worktree (diff, container): `auto` (default) reads it in place when the path
           * exists on the API's host, else asks the worker of the attempt's host; `host` always asks that worker
           */
          worktreeReads: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('host')])),
          /** how long the API waits for such a read from the attempt's host before answering 503 (default 15 s) */
          hostReadTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
          /** how long DELETE /api/attempts/:id waits for the host to remove worktree and branch (default 15 s) */
          deleteWaitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })),
          /**
           * how long POST /api/attempts/:id/merge waits for a worker to finish the merge before answering 503 with an
           * unknown outcome (default 60 s; docs/attempts.md: the merge still runs when a worker takes it)
           */
          mergeWaitMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
          /** how often each worker prunes worktrees of deleted attempts from its $ARMADA_HOME/worktrees (default 1 h; 0 = never) */
          janitorIntervalMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** projects' managed clones (docs/task-service.md, "Managed clones") */
    projects: Type.Optional(
      Type.Object(
        {
          /**
           * the clone activity's heartbeat timeout: how soon a clone whose worker died is tried again by another
           * (default 60 s). The activity beats every 5 s, so at least 15 s (three beats).
           */
          cloneHeartbeatTimeoutMs: Type.Optional(Type.Integer({ minimum: 15_000, maximum: 3_600_000 })),
          /**
           * the pause before a failed clone's second try (default 2 s), doubled before each next try up to 1 minute; five
           * tries in all, so a clone that cannot succeed (a refused login, no server) is failed ~30 s after its start
           */
          cloneRetryInitialIntervalMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 60_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** users' process groups (agents, setup and scheduler scripts): their CPU priority (lib/process/priority.ts) */
    processes: Type.Optional(Type.Object({ nice: Type.Optional(Type.Integer({ minimum: 0, maximum: 19 })) }, { additionalProperties: false })),
    /** outbound webhook delivery (lib/webhooks/deliveryPolicy.ts holds the defaults; docs/webhooks.md#delivery-durable-and-retried) */
    webhooks: Type.Optional(
      Type.Object(
        {
          // at most 110 s: a delivery try (workflows/webhookDeliveryWorkflow.ts) has 2 minutes for its request and its log row
          timeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 110_000 })),
          /** real tries (requests sent) after which a delivery gives up (default 16) */
          maxTries: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
          /** how long after its event was committed a delivery still tries (default 24 h) */
          retryForMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 30 * 86_400_000 })),
          /** consecutive failed tries of a webhook after which its breaker opens: one probe at a time (default 3) */
          openAfterFailures: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
          /** the first pause between a delivery's tries, and between probes; doubles after each (default 1 s) */
          backoffInitialMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 3_600_000 })),
          /** the longest pause between a delivery's tries, and between probes (default 5 min) */
          backoffMaxMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 3_600_000 })),
        },
        { additionalProperties: false },
      ),
    ),
    cors: Type.Optional(Type.Object({ origins: Type.Optional(Type.Array(Type.String())) }, { additionalProperties: false })),
    scheduler: Type.Optional(
      Type.Object(
        {
          catchupWindowSeconds: Type.Optional(Type.Integer({ minimum: 10, maximum: MAX_TEMPORAL_DURATION_MS / 1000 })),
          retentionDays: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_RETENTION_DAYS })),
          healthCheckIntervalSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_TEMPORAL_DURATION_MS / 1000 })),
          scriptTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: Math.floor(MAX_TIMER_MS / 1000) })),
          sourceTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS })),
          /** how long an execution may be running without a Temporal run before the reconciler fails it (default 60 s) */
          reconcileAfterSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
        },
        { additionalProperties: false },
      ),
    ),
    rateLimit: Type.Optional(
      Type.Object(
        { perMinutePerIp: Type.Optional(Type.Integer({ minimum: 1 })), perHourPerUser: Type.Optional(Type.Integer({ minimum: 1 })) },
        { additionalProperties: false },
      ),
    ),
    /** Task list pages and details kept per API process, dropped on any change (docs/task-service.md#read-cache). */
    taskReadCache: Type.Optional(
      Type.Object(
        { enabled: Type.Optional(Type.Boolean()), maxEntries: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })) },
        { additionalProperties: false },
      ),
    ),
    /** How often an attached pull request is polled for its merge (docs/codehost.md). */
    codehost: Type.Optional(
      Type.Object(
        {
          pollIntervalMs: Type.Optional(Type.Integer({ minimum: 100, maximum: MAX_TEMPORAL_DURATION_MS })),
          /** how long create-pr waits for any worker to take up its push before a 503 with nothing pushed (default 30 s) */
          pushPickupMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type FileConfig = Static<typeof FileConfigSchema>;

export interface ServicePorts {
  task: number;
  scheduler: number;
  /** Second scheduler port (the spec's 8002); null when ARMADA_SCHEDULER_ALT_PORT is empty. */
  schedulerAlt: number | null;
  agents: number;
  traces: number;
}

export interface ArmadaConfig {
  home: string;
  configPath: string;
  /**
   * Set when ARMADA_CONFIG names a file that does not exist: the defaults apply (a missing file = defaults), and the
   * commands say so in one warning (configWarning), since a misspelled path would otherwise go unnoticed.
   */
  missingConfigFile?: string;
  /** External PostgreSQL; undefined = embedded server in $ARMADA_HOME/pg. */
  databaseUrl?: string;
  temporal: { address?: string; namespace: string; cliPath: string; metricsPort: number | null; taskQueue: string };
  /** Ports of the servers `armada start` runs itself when DATABASE_URL / TEMPORAL_ADDRESS are unset. */
  embedded: { pgPort: number; temporalPort: number; temporalUiPort: number | null };
  host: string;
  ports: ServicePorts;
  /** Explicit keys from the environment; generated keys are resolved by lib/keys.ts. */
  apiKeys: { default?: string; scheduler?: string; agents?: string; traces?: string; task?: string };
  encryptionKey?: string;
  codehost: { apiUrl: string; oauthUrl: string; clientId: string; pollIntervalMs: number };
  /** Bounds of filesystem walks (repository discovery, recursive listing): docs/filesystem.md#bounds. */
  filesystemWalks: { timeBudgetMs: number; maxEntries: number; concurrency: number; queue: number };
  /**
   * Where the services are reached from this host (the task service's /svc/<service>/ forwarding, the scheduler CLI,
   * `armada tools serve`): ARMADA_<SERVICE>_URL, default ARMADA_HOST (127.0.0.1 for a wildcard bind) and the service's port.
   */
  serviceUrls: { task: string; scheduler: string; agents: string; traces: string };
  /** The board's built assets, served at `/` by the task service: ARMADA_WEB_DIR, default web/dist of the installation. */
  webDir: string;
  /** Seconds between `: keep-alive` comment lines on SSE streams (ARMADA_SSE_KEEPALIVE_MS, in ms; default 15 s). */
  sseKeepAliveMs: number;
  /** How long a client has to send a whole request, headers and body (ARMADA_REQUEST_TIMEOUT_MS; default 60 s), else 408. */
  requestTimeoutMs: number;
  /**
   * PostgreSQL limits of each connection of the API's pool (never the worker's, nor migrations): `lock_timeout`
   * (ARMADA_API_LOCK_TIMEOUT_MS, default 5 s) and `statement_timeout` (ARMADA_API_STATEMENT_TIMEOUT_MS, default 30 s);
   * 0 sets none (the server's, its database's or role's own apply). A request whose statement waits longer for a lock
   * held by another transaction, or runs longer, answers 503 instead of hanging (docs/configuration.md).
   * `idle_in_transaction_session_timeout` (ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS, default 30 s): PostgreSQL ends the
   * session of a transaction that waits that long for its next statement (its process stopped or stalled mid-request),
   * so the row locks it holds are released instead of kept until the process resumes.
   */
  apiDatabaseLimits: { lockTimeoutMs: number; statementTimeoutMs: number; idleInTransactionTimeoutMs: number };
  /**
   * The workers' pool (`armada worker`, and the workers of `armada start`): how long an activity waits for a free
   * connection (ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS, default 60 s: a burst of activities waits rather than fails), and
   * its connections' `idle_in_transaction_session_timeout` (ARMADA_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS, default
   * 30 s): an activity's transactions run only their own statements, so one idle that long belongs to a stalled
   * process (docs/configuration.md#the-workers-pool). No lock or statement limit: an activity waits for a lock.
   */
  workerDatabase: { connectTimeoutMs: number; idleInTransactionTimeoutMs: number };
  /**
   * How long the Temporal calls a request of the task service makes while it holds a PostgreSQL transaction open may
   * wait for Temporal, together (ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS, default 10 s): the workflow starts
   * committed with their rows (an approval, an autoSend follow-up draft, an autoExecute follow-up queue, a project's
   * clone) and the approval cancels of a delete. Past it the request answers 503 "try again" and its transaction rolls
   * back, well before `apiDatabaseLimits.idleInTransactionTimeoutMs` would end its session (lib/temporal/temporalBound.ts).
   */
  temporalInTransactionMs: number;
  /** Allowed CORS origins: ARMADA_CORS_ORIGINS (comma-separated) or `cors.origins`; undefined = the service default. */
  corsOrigins?: string[];
  /** `armada start`: how its embedded servers are restarted when they die (lib/runtime/supervisor.ts). */
  supervision: { maxFailures: number; windowMs: number; initialBackoffMs: number; maxBackoffMs: number };
  /** How long a stopping worker lets running activities finish (`armada start`, SIGINT/SIGTERM). */
  shutdownGraceMs: number;
  logLevel: string;
  /** ARMADA_LOG_FORMAT; undefined = pretty when stdout is a TTY, JSON otherwise. */
  logFormat?: 'pretty' | 'json';
  /** Where tools Armada provisions itself live (the Temporal CLI's venv): ARMADA_TOOLS_DIR, default $ARMADA_HOME/tools. */
  toolsDir: string;
  file: FileConfig;
  branchPrefix: string;
  version: string;
}

export { ConfigError } from './errors';

const ajv = new Ajv({ allErrors: true, strict: false });
const validateFile = ajv.compile(FileConfigSchema);

/** Validates a parsed config file; the message names the offending key's path (e.g. `agents.claude.comand`). */
export function parseFileConfig(raw: unknown, source: string): FileConfig {
  if (validateFile(raw)) return raw as FileConfig;
  const first = validateFile.errors?.[0];
  if (!first) throw new ConfigError(`${source}: invalid configuration`);
  const base = first.instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  if (first.keyword === 'additionalProperties') {
    const key = [base, (first.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.');
    throw new ConfigError(`${source}: unknown key "${key}"`);
  }
  if (first.keyword === 'required') {
    const key = [base, (first.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
    throw new ConfigError(`${source}: missing key "${key}"`);
  }
  if (first.keyword === 'enum') {
    const allowed = (first.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ');
    throw new ConfigError(`${source}: "${base}" must be one of ${allowed}`);
  }
  throw new ConfigError(`${source}: "${base || '(root)'}" ${first.message ?? 'is invalid'}`);
}

/**
 * The config file's text: a regular file of at most CONFIG_FILE_MAX_BYTES (lib/fs/regularFile.ts). Read whole without
 * these checks, a path to /dev/zero (or a symlink to it) was read until the heap ran out, and a FIFO nobody writes to
 * hung the command.
 */
function readConfigText(configPath: string): string | undefined {
  try {
    return readRegularFile(configPath, CONFIG_FILE_MAX_BYTES);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (err instanceof NotAFileError) throw new ConfigError(`${configPath}: it is ${err.kind}, not a file; point ARMADA_CONFIG at a JSON file (docs/configuration.md)`);
    if (err instanceof FileTooLargeError) throw new ConfigError(`${configPath}: larger than a config file may be (${CONFIG_FILE_MAX_BYTES} bytes)`);
    throw new ConfigError(`${configPath}: cannot read (${(err as Error).message})`);
  }
}

/**
 * JSON.parse's reviver for the config file: a number past a double's range (`1e999`) parses as Infinity, which the
 * schema's integer check let through where a key has no maximum (`codehost.pollIntervalMs`), and went on as `null` in
 * a workflow's arguments.
 */
function refuseInfinity(key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new ConfigError(`"${key}" is a number too large to hold`);
  return value;
}

function readFileConfig(configPath: string): FileConfig {
  const text = readConfigText(configPath);
  if (text === undefined) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(text, refuseInfinity);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(`${configPath}: ${err.message}`);
    throw new ConfigError(`${configPath}: not valid JSON (${(err as Error).message})`);
  }
  return parseFileConfig(raw, configPath);
}

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name}: "${v}" is not a port number`);
  return n;
}

function optionalPort(env: NodeJS.ProcessEnv, name: string, fallback: number): number | null {
  if (env[name] === '') return null;
  return port(env, name, fallback);
}

/** config.requestTimeoutMs when ARMADA_REQUEST_TIMEOUT_MS is unset. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * config.apiDatabaseLimits when ARMADA_API_LOCK_TIMEOUT_MS / ARMADA_API_STATEMENT_TIMEOUT_MS are unset. A request's
 * own statements take milliseconds, and a scheduler change no longer holds its schedule's row during its Temporal call
 * (it holds a change lock, waited for on its own terms: docs/scheduler.md#concurrent-changes); a lock held longer
 * than 5 s is most likely a stuck transaction (an operator's open `BEGIN … FOR UPDATE`), and the statement limit only
 * catches what would otherwise hang.
 */
export const DEFAULT_API_LOCK_TIMEOUT_MS = 5000;
export const DEFAULT_API_STATEMENT_TIMEOUT_MS = 30_000;
/**
 * config.apiDatabaseLimits.idleInTransactionTimeoutMs when ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS is unset: above the
 * longest a request keeps its transaction open while it waits for something else, a Temporal call (a scheduler route's
 * 10 s deadline, api/scheduler/temporalAccess.ts; a workflow start committed with its row, which a healthy Temporal
 * answers in milliseconds and a stalled one within DEFAULT_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS). A transaction idle longer belongs to a stopped or stalled process; PostgreSQL ends its
 * session, its locks are released, and it is rolled back whole.
 */
export const DEFAULT_API_IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;
/**
 * config.temporalInTransactionMs when ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS is unset: a third of the idle
 * limit above, so a request whose Temporal stalls answers 503 with its transaction rolled back by the API itself,
 * not ended by PostgreSQL under it; a healthy Temporal answers in milliseconds.
 */
export const DEFAULT_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS = 10_000;
/** config.workerDatabase when ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS / ARMADA_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS are unset. */
export const DEFAULT_WORKER_DB_CONNECT_TIMEOUT_MS = 60_000;
export const DEFAULT_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;

/**
 * An integer setting from the environment. Every one is a duration or count that ends up in a Node timer or a
 * PostgreSQL `*_timeout` (in ms, or in s times 1000), so `max` defaults to MAX_TIMER_MS: a value beyond it wrapped
 * round to 1 ms (ARMADA_SSE_KEEPALIVE_MS=3000000000 wrote a keep-alive every millisecond).
 */
function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 1, max = MAX_TIMER_MS): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name}: "${v}" is not an integer from ${min} to ${max}`);
  return n;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}

/**
 * DATABASE_URL when set: a PostgreSQL URL (`postgres://` or `postgresql://`) that parses, else a ConfigError naming the
 * setting and its form, never its value (it holds the password). node-postgres said only "Invalid URL", or took a
 * string of no URL form for a host name ("getaddrinfo ENOTFOUND base" for `not a url`).
 */
function databaseUrl(env: NodeJS.ProcessEnv): string | undefined {
  const v = nonEmpty(env.DATABASE_URL);
  if (v === undefined) return undefined;
  let ok = /^postgres(ql)?:\/\/[^/]/i.test(v);
  if (ok) {
    try {
      new URL(v);
    } catch {
      ok = false;
    }
  }
  if (!ok) {
    throw new ConfigError(
      'DATABASE_URL is not a PostgreSQL URL of the form postgres://user:password@host:5432/database (percent-encode special characters in the password); fix it, or unset it to use the embedded PostgreSQL',
    );
  }
  return v;
}

function serviceUrl(env: NodeJS.ProcessEnv, name: string, localPort: number): string {
  const v = nonEmpty(env[name]);
  if (v === undefined) return localUrl(nonEmpty(env.ARMADA_HOST) ?? '127.0.0.1', localPort);
  if (!/^https?:\/\/[^/]+/.test(v)) throw new ConfigError(`${name}: "${v}" is not an http(s) URL`);
  return v.replace(/\/+$/, '');
}

function packageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/**
 * The ARMADA_HOME an environment names: ARMADA_HOME, else ~/.armada (HOME of that environment, else this user's),
 * resolved against `cwd`.
 */
export function armadaHome(env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  return path.resolve(cwd, nonEmpty(env.ARMADA_HOME) ?? path.join(nonEmpty(env.HOME) ?? os.homedir(), '.armada'));
}

/** Builds the configuration from an environment (process.env by default) and the config file it names. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): ArmadaConfig {
  const home = armadaHome(env);
  const configPath = path.resolve(nonEmpty(env.ARMADA_CONFIG) ?? path.join(home, 'config.json'));
  const file = readFileConfig(configPath);
  // the default path missing is the normal case; a path someone set and that is not there is most likely a typo
  const missingConfigFile = nonEmpty(env.ARMADA_CONFIG) !== undefined && !fs.existsSync(configPath) ? configPath : undefined;
  const logLevel = nonEmpty(env.ARMADA_LOG_LEVEL) ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`ARMADA_LOG_LEVEL: "${logLevel}" is not a pino level`);
  }
  const logFormat = nonEmpty(env.ARMADA_LOG_FORMAT);
  if (logFormat !== undefined && logFormat !== 'pretty' && logFormat !== 'json') {
    throw new ConfigError(`ARMADA_LOG_FORMAT: "${logFormat}" is not pretty or json`);
  }
  return {
    home,
    configPath,
    missingConfigFile,
    toolsDir: path.resolve(nonEmpty(env.ARMADA_TOOLS_DIR) ?? path.join(home, 'tools')),
    databaseUrl: databaseUrl(env),
    temporal: {
      address: nonEmpty(env.TEMPORAL_ADDRESS),
      namespace: nonEmpty(env.TEMPORAL_NAMESPACE) ?? 'default',
      cliPath: nonEmpty(env.TEMPORAL_CLI_PATH) ?? 'temporal',
      metricsPort: optionalPort(env, 'ARMADA_TEMPORAL_METRICS_PORT', 9464),
      taskQueue: nonEmpty(env.ARMADA_TASK_QUEUE) ?? 'armada',
    },
    embedded: {
      pgPort: port(env, 'ARMADA_PG_PORT', 54329),
      temporalPort: port(env, 'ARMADA_TEMPORAL_PORT', 7233),
      temporalUiPort: optionalPort(env, 'ARMADA_TEMPORAL_UI_PORT', 8233),
    },
    host: nonEmpty(env.ARMADA_HOST) ?? '127.0.0.1',
    ports: {
      task: port(env, 'ARMADA_TASK_PORT', 8887),
      scheduler: port(env, 'ARMADA_SCHEDULER_PORT', 8883),
      schedulerAlt: optionalPort(env, 'ARMADA_SCHEDULER_ALT_PORT', 8002),
      agents: port(env, 'ARMADA_AGENTS_PORT', 8001),
      traces: port(env, 'ARMADA_TRACES_PORT', 8000),
    },
    apiKeys: {
      default: nonEmpty(env.ARMADA_API_KEY),
      scheduler: nonEmpty(env.ARMADA_SCHEDULER_API_KEY),
      agents: nonEmpty(env.ARMADA_AGENTS_API_KEY),
      traces: nonEmpty(env.ARMADA_TRACES_API_KEY),
      task: nonEmpty(env.ARMADA_TASK_API_KEY),
    },
    encryptionKey: nonEmpty(env.ARMADA_ENCRYPTION_KEY),
    codehost: {
      apiUrl: nonEmpty(env.ARMADA_CODEHOST_API_URL) ?? 'https://api.github.com',
      oauthUrl: nonEmpty(env.ARMADA_CODEHOST_OAUTH_URL) ?? 'https://github.com',
      clientId: nonEmpty(env.ARMADA_CODEHOST_CLIENT_ID) ?? '',
      pollIntervalMs: file.codehost?.pollIntervalMs ?? 60_000,
    },
    filesystemWalks: {
      timeBudgetMs: file.filesystem?.walkTimeBudgetMs ?? 10_000,
      maxEntries: file.filesystem?.walkMaxEntries ?? 50_000,
      concurrency: file.filesystem?.concurrentWalks ?? 2,
      queue: file.filesystem?.queuedWalks ?? 16,
    },
    serviceUrls: {
      task: serviceUrl(env, 'ARMADA_TASK_URL', port(env, 'ARMADA_TASK_PORT', 8887)),
      scheduler: serviceUrl(env, 'ARMADA_SCHEDULER_URL', port(env, 'ARMADA_SCHEDULER_PORT', 8883)),
      agents: serviceUrl(env, 'ARMADA_AGENTS_URL', port(env, 'ARMADA_AGENTS_PORT', 8001)),
      traces: serviceUrl(env, 'ARMADA_TRACES_URL', port(env, 'ARMADA_TRACES_PORT', 8000)),
    },
    webDir: path.resolve(nonEmpty(env.ARMADA_WEB_DIR) ?? path.join(__dirname, '..', 'web', 'dist')),
    sseKeepAliveMs: positiveInteger(env, 'ARMADA_SSE_KEEPALIVE_MS', 15_000),
    requestTimeoutMs: positiveInteger(env, 'ARMADA_REQUEST_TIMEOUT_MS', DEFAULT_REQUEST_TIMEOUT_MS),
    apiDatabaseLimits: {
      // the pool waits up to twice the lock timeout for a connection (lib/db/pool.ts waitBudgetOf), in one timer
      lockTimeoutMs: positiveInteger(env, 'ARMADA_API_LOCK_TIMEOUT_MS', DEFAULT_API_LOCK_TIMEOUT_MS, 0, Math.floor(MAX_TIMER_MS / 2)),
      statementTimeoutMs: positiveInteger(env, 'ARMADA_API_STATEMENT_TIMEOUT_MS', DEFAULT_API_STATEMENT_TIMEOUT_MS, 0),
      idleInTransactionTimeoutMs: positiveInteger(env, 'ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS', DEFAULT_API_IDLE_IN_TRANSACTION_TIMEOUT_MS, 0),
    },
    workerDatabase: {
      connectTimeoutMs: positiveInteger(env, 'ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS', DEFAULT_WORKER_DB_CONNECT_TIMEOUT_MS),
      idleInTransactionTimeoutMs: positiveInteger(env, 'ARMADA_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS', DEFAULT_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS, 0),
    },
    temporalInTransactionMs: positiveInteger(env, 'ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS', DEFAULT_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS, 100),
    corsOrigins: nonEmpty(env.ARMADA_CORS_ORIGINS)
      ?.split(',')
      .map((o) => o.trim())
      .filter(Boolean) ?? file.cors?.origins,
    supervision: {
      maxFailures: positiveInteger(env, 'ARMADA_RESTART_MAX_FAILURES', 5),
      windowMs: positiveInteger(env, 'ARMADA_RESTART_WINDOW_SECONDS', 300, 1, Math.floor(MAX_TIMER_MS / 1000)) * 1000,
      initialBackoffMs: 500,
      maxBackoffMs: 15_000,
    },
    // `armada start` gives its workers this plus 5 s in one timer (cli/start.ts)
    shutdownGraceMs: positiveInteger(env, 'ARMADA_SHUTDOWN_GRACE_SECONDS', 10, 0, Math.floor((MAX_TIMER_MS - 5000) / 1000)) * 1000,
    logLevel,
    logFormat,
    file,
    branchPrefix: file.branchPrefix ?? 'armada',
    version: packageVersion(),
  };
}

/** The one warning about a config that loaded: ARMADA_CONFIG names a file that does not exist. */
export function configWarning(config: ArmadaConfig): string | undefined {
  return config.missingConfigFile
    ? `ARMADA_CONFIG names ${config.missingConfigFile}, which does not exist; going on with the defaults (docs/configuration.md)`
    : undefined;
}

/** Whether `host` is a loopback bind address: 127.0.0.0/8, ::1 (also IPv4-mapped 127.x) or localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === 'localhost.') return true;
  if (net.isIPv4(h)) return h.split('.')[0] === '127';
  if (!net.isIPv6(h)) return false;
  const loopback = new net.BlockList();
  loopback.addAddress('::1', 'ipv6');
  loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
  return loopback.check(h, 'ipv6');
}

/**
 * The bind rule (docs/security.md#bind-rule): a task service other hosts can reach runs setup scripts and agents for
 * whoever calls it, so binding ARMADA_HOST to a non-loopback address needs ARMADA_TASK_API_KEY or `users`.
 * Throws a one-line ConfigError otherwise.
 */
export function assertTaskServiceBindAllowed(config: ArmadaConfig): void {
  if (isLoopbackHost(config.host)) return;
  if (config.apiKeys.task || (config.file.users?.length ?? 0) > 0) return;
  throw new ConfigError(
    `ARMADA_HOST=${config.host} is not a loopback address and the task service would run without a key: set ARMADA_TASK_API_KEY or "users" in ${config.configPath}, or bind to 127.0.0.1 (docs/security.md#bind-rule)`,
  );
}
