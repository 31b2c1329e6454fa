/** The help texts of the `armada` command line: the list of commands, and one short help per command. */

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
                        --health-port serves /health, /health/live, /metrics and POST /drain, from the start;
                        SIGTERM, SIGHUP or /drain stops polling and gives running activities S seconds
                        (default 30) to finish.
                        --concurrency N: short activities at once (default 20); --max-agents caps the
                        agent processes this worker runs at once (default: up to 250 agent runs).
  bundle --out FILE     Prebuild the workflow bundle for production workers (ARMADA_WORKFLOW_BUNDLE=FILE).
  migrate [--json]      Apply database migrations (DATABASE_URL, or the embedded server of ARMADA_HOME).
  worktrees prune [--dry-run]
                        Remove this host's worktrees (and managed branches) of attempts that no longer
                        exist, printing each as a JSON line; workers do it every attempts.janitorIntervalMs.
  sources list|add|update|delete|health|flows
                        The scheduler's sources over HTTP (armada sources --help).
  workflows list|run|retry
                        The scheduler's workflows over HTTP (armada workflows --help).
  schedules list|add|pause|resume|delete
                        The schedules of the scheduler's workflows over HTTP (armada schedules --help).
  infra [--home DIR] [--pg-port N] [--temporal-port N] [--bundle FILE] [--until-stdin-closes] [--show-secrets]
                        Start only the embedded PostgreSQL and Temporal dev server, print their
                        addresses as one JSON line and run until stopped (tests and local tooling).
  tools <openapi|serve|config> ...
                        MCP tool servers for code editors and their config files (armada tools --help).

Options:
  -h, --help            Show this help (armada <command> --help: that command's).
  -v, --version         Show the version.

Environment: ARMADA_HOME, ARMADA_CONFIG, DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_CLI_PATH, ARMADA_TOOLS_DIR, ARMADA_HOST, ARMADA_*_PORT, ARMADA_API_KEY, ARMADA_LOG_LEVEL,
ARMADA_LOG_FORMAT (see README.md).
`;

/** The commands whose help lives here; the HTTP clients (sources, workflows, schedules), worktrees and tools have their own. */
export type HelpedCommand = 'start' | 'status' | 'api' | 'worker' | 'bundle' | 'migrate' | 'infra';

export const COMMAND_HELP: Record<HelpedCommand, string> = {
  start: `armada start — run the whole suite on this machine

Usage: armada start

Starts an embedded PostgreSQL in $ARMADA_HOME/pg (unless DATABASE_URL is set) and a Temporal dev server
(unless TEMPORAL_ADDRESS is set), applies migrations, then runs the four HTTP services and one worker in this
process. Ctrl-C, SIGTERM or SIGHUP stops everything it started. When ready it prints the addresses: as text on a
terminal (with the API key generated on the first start), as one JSON line {"event":"ready",…} otherwise, which
names the key's file ($ARMADA_HOME/api-key) and never the key. A missing Temporal CLI is provisioned once into
ARMADA_TOOLS_DIR.

Environment: ARMADA_HOME, ARMADA_CONFIG, DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_CLI_PATH,
ARMADA_TOOLS_DIR, ARMADA_HOST, ARMADA_TASK_PORT, ARMADA_SCHEDULER_PORT, ARMADA_SCHEDULER_ALT_PORT,
ARMADA_AGENTS_PORT, ARMADA_TRACES_PORT, ARMADA_PG_PORT, ARMADA_TEMPORAL_PORT, ARMADA_TEMPORAL_UI_PORT,
ARMADA_API_KEY, ARMADA_TASK_API_KEY, ARMADA_LOG_LEVEL, ARMADA_LOG_FORMAT, ARMADA_SHUTDOWN_GRACE_SECONDS.
See README.md and docs/operations.md.
`,
  status: `armada status — what runs on this ARMADA_HOME

Usage: armada status [--json]

Shows whether an armada runs on $ARMADA_HOME (decided by the home's own processes: the armada owning its embedded
servers, or one started with this ARMADA_HOME serving a port), each configured service port and its /health (a
service of another home on that port is "other", naming that home), the worker queues and their pollers,
PostgreSQL and Temporal, versions and the data directory's size. Changes nothing; works on a stopped home.
Prints text on a terminal, and one JSON object when stdout is not a terminal (a pipe, a file, a monitoring check).

Options:
  --json                The JSON object on a terminal too.

Environment: ARMADA_HOME, ARMADA_CONFIG, ARMADA_HOST, ARMADA_*_PORT, DATABASE_URL, TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, ARMADA_LOG_FORMAT (pretty: text on a pipe too; json: JSON on a terminal too). See README.md.
`,
  api: `armada api — run HTTP services only (production)

Usage: armada api [--service S]...

Options:
  --service S           task, scheduler, agents or traces; repeatable (default: all four).

Prints {"event":"listening","addresses":{…}} when ready; SIGTERM or SIGHUP drains and stops.

Environment: DATABASE_URL (required), TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE, ARMADA_HOME,
ARMADA_CONFIG, ARMADA_HOST, ARMADA_*_PORT, ARMADA_API_KEY, ARMADA_TASK_API_KEY, ARMADA_ENCRYPTION_KEY,
ARMADA_LOG_LEVEL, ARMADA_LOG_FORMAT. See docs/operations.md.
`,
  worker: `armada worker — run a Temporal worker (production)

Usage: armada worker [--queue Q]... [--concurrency N] [--max-agents N] [--health-port N] [--grace S] [--identity ID]

Options:
  --queue Q             Task queue to poll; repeatable (default: the shared queue and this host's queue).
  --concurrency N       Short activities at once (default 20).
  --max-agents N        Agent processes this worker runs at once (default: up to 250 agent runs).
  --health-port N       Serve /health, /health/live, /metrics and POST /drain on this port (0: any free port),
                        open from the start: /health (readiness) is 503 saying what the start waits for
                        (Temporal) until the workers poll, /health/live (liveness) 200 while the process runs.
  --grace S             Seconds running activities get to finish on SIGTERM, SIGHUP or /drain (default 30).
  --identity ID         Worker identity in Temporal (default <hostname>-<pid>).

Prints {"event":"worker-started",…} when polling and {"event":"worker-stopped",…} at the end.

Environment: DATABASE_URL (required), TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE,
ARMADA_TASK_QUEUE, ARMADA_HOME, ARMADA_CONFIG, ARMADA_WORKER_PORT, ARMADA_WORKER_GRACE_SECONDS,
ARMADA_WORKER_MAX_AGENTS, ARMADA_WORKFLOW_BUNDLE, ARMADA_TEMPORAL_METRICS_PORT. See docs/operations.md.
`,
  bundle: `armada bundle — prebuild the workflow bundle for production workers

Usage: armada bundle --out FILE

Options:
  --out FILE            Where to write the bundle; workers load it with ARMADA_WORKFLOW_BUNDLE=FILE.

See docs/operations.md (Upgrades and workflow versioning).
`,
  migrate: `armada migrate — apply the database migrations

Usage: armada migrate [--json]

Applies the migrations to DATABASE_URL, or, when it is unset, to the embedded PostgreSQL of $ARMADA_HOME
(started for the run, and refused while an armada runs on that home). Concurrent runs wait for each other.
Prints the migrations applied, or that the database is up to date: as text on a terminal, as one JSON line
{"event":"migrated","applied":[…],…} when stdout is not a terminal (a pipe, a file, a deploy job), like the logs.

Options:
  --json                The JSON line on a terminal too.

Environment: DATABASE_URL, ARMADA_HOME, ARMADA_PG_PORT, ARMADA_LOG_FORMAT (pretty: text on a pipe too; json: JSON
on a terminal too). See docs/operations.md.
`,
  infra: `armada infra — only the embedded PostgreSQL and Temporal dev server (tests and local tooling)

Usage: armada infra [--home DIR] [--pg-port N] [--temporal-port N] [--bundle FILE] [--until-stdin-closes]
                   [--show-secrets]

Starts them, applies the migrations, prints {"event":"ready","databaseUrl":…,"temporalAddress":…} and runs
until stopped (SIGINT, SIGTERM or SIGHUP). The database URLs are printed with their password as *** and
"passwordFile" names the file that holds the embedded server's password ($ARMADA_HOME/pg-password, mode 0600).

Options:
  --home DIR            ARMADA_HOME to use (default: $ARMADA_HOME, else a new temporary directory).
  --pg-port N           Port of the embedded PostgreSQL (default ARMADA_PG_PORT, 54329).
  --temporal-port N     Port of the dev server (default ARMADA_TEMPORAL_PORT, 7233).
  --bundle FILE         Also write the workflow bundle there.
  --until-stdin-closes  Stop when stdin closes (the caller went away).
  --show-secrets        Print the database URLs whole, password included (for a program that connects with them).

Environment: ARMADA_HOME, TEMPORAL_CLI_PATH, ARMADA_TOOLS_DIR. See README.md (Development).
`,
};
