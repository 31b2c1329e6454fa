/** Builds an Armada worker: the bundled workflows plus the activities, on the shared queue and this host's queue. */
import fs from 'node:fs';
import path from 'node:path';
import { Worker as Thread } from 'node:worker_threads';
import { NativeConnection, Worker, type InjectedSinks, type WorkflowBundleOption } from '@temporalio/worker';
import type { Pool } from 'pg';
import { createActivities } from '../activities';
import { createRunDefinitions } from '../activities/scheduler/runDefinitions';
import { createWorkInHand } from '../lib/runtime/workInHand';
import { pruneStaleScriptDirs } from '../activities/scheduler/scriptDirs';
import type { SchedulerSinks } from '../workflows/workflowRunWorkflow';
import { createEventListener } from '../lib/events/listener';
import type { ArmadaConfig } from '../lib/config';
import type { Logger } from '../lib/logger';
import type { Metrics } from '../lib/metrics';
import { isTemporalUnreachable } from '../lib/temporal/client';
import { hostQueue } from '../lib/temporal/queues';
import { requireSearchAttributesInTime, SEARCH_ATTRIBUTES_CHECK_MS, SearchAttributesMissing } from '../lib/temporal/searchAttributeCheck';
import { workerIdentity } from '../lib/workerIdentity';
import { createSlots } from '../lib/process/slots';
import type { Faults } from '../lib/faults';
import { scrubManagedClones } from '../activities/git/scrubRemoteCredentials';
import { stopOrphanedCommands } from '../lib/process/orphans';
import { DEFAULT_JANITOR_INTERVAL_MS, startWorktreeJanitor, type WorktreeJanitor } from './worktreeJanitor';

/** True when this module runs from the compiled output of `npm run build` (dist/), not through tsx. */
const COMPILED = path.extname(__filename) === '.js';

/** The workflow sources: index.ts under tsx, the compiled index.js in dist/. */
export const WORKFLOWS_PATH = path.join(__dirname, '..', 'workflows', COMPILED ? 'index.js' : 'index.ts');

/** The bundle `npm run build` writes beside the compiled code (dist/workflow-bundle.js). */
export const BUILT_WORKFLOW_BUNDLE = path.join(__dirname, '..', 'workflow-bundle.js');

/**
 * The prebuilt bundle: ARMADA_WORKFLOW_BUNDLE when that file exists, else (compiled runs only) the one `npm run build`
 * wrote beside the code; otherwise a fresh bundle from the workflow sources.
 */
export async function loadWorkflowBundle(bundlePath = process.env.ARMADA_WORKFLOW_BUNDLE): Promise<WorkflowBundleOption> {
  if (bundlePath && fs.existsSync(bundlePath)) return { codePath: bundlePath };
  if (!bundlePath && COMPILED && fs.existsSync(BUILT_WORKFLOW_BUNDLE)) return { codePath: BUILT_WORKFLOW_BUNDLE };
  return { code: await bundleWorkflows() };
}

/**
 * The workflow bundle's code, built in a worker thread (workers/workflowBundler.js) whose heap goes away with it:
 * bundling in this process left webpack's garbage in its old space, collected by a mark-compact of ~200 ms at some
 * later moment (in `armada infra` during bench/logs.ts, ~25 s after the start).
 */
export function bundleWorkflows(): Promise<string> {
  return new Promise((resolve, reject) => {
    const thread = new Thread(path.join(__dirname, 'workflowBundler.js'), { workerData: { workflowsPath: WORKFLOWS_PATH } });
    let answer: { code?: string; error?: string } | undefined;
    thread.once('message', (m: { code?: string; error?: string }) => {
      answer = m;
    });
    thread.once('error', reject);
    thread.once('exit', (code) => {
      if (answer?.code !== undefined) resolve(answer.code);
      else reject(new Error(`bundling the workflows failed: ${answer?.error ?? `the bundler thread exited with code ${code}`}`));
    });
  });
}

/** Writes the workflow bundle to a file (the production build and the test harness use it). */
export async function writeWorkflowBundle(dest: string): Promise<void> {
  const code = await bundleWorkflows();
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.writeFileSync(`${dest}.tmp`, code);
  fs.renameSync(`${dest}.tmp`, dest);
}

export interface WorkerOptions {
  config: ArmadaConfig;
  db: Pool;
  logger: Logger;
  /** Shared with the HTTP services in `armada start`, so one /metrics shows both. */
  metrics: Metrics;
  address: string;
  namespace: string;
  taskQueues?: string[];
  concurrency?: number;
  workflowBundle?: WorkflowBundleOption;
  shutdownGraceMs?: number;
  /** Temporal worker identity, shown in process records (default: host-pid). */
  identity?: string;
  /** Cap on concurrent agent processes in this worker (all agents together). */
  maxAgents?: number;
  /** Test-only failure points (lib/faults.ts): the retry tests make activities fail after their side effects. */
  faults?: Faults;
  /**
   * Called once when Temporal took the connection but did not answer the search attribute check in time: the start
   * goes on waiting for it (`armada start` serves HTTP meanwhile).
   */
  onTemporalNotAnswering?: () => void;
  /** Ends the wait for that answer (a shutdown under way): the start then fails with WorkerStartAbandoned. */
  shouldStop?: () => boolean;
  /**
   * A Temporal that cannot be reached at start (the connection refused, no answer to the connect) is tried again
   * every SEARCH_ATTRIBUTES_CHECK_MS until it is, instead of failing the start (`armada worker`, whose health port
   * says so meanwhile); shouldStop ends that wait too.
   */
  untilTemporalConnects?: boolean;
  /** Told what the start waits for, each time that changes (`armada worker`'s readiness answer says it). */
  onWaiting?: (waitingFor: string) => void;
}

/**
 * gRPC CANCELLED (what the SDK 1.24 native connection's deadline ends a call with: "Timeout expired"),
 * DEADLINE_EXCEEDED and UNAVAILABLE: Temporal did not answer in time, or could not take the call now.
 */
const WAITED_OUT_CODES = new Set<unknown>([1, 4, 14]);
/** After the first warning, one more only this often while Temporal still does not answer. */
const NOT_ANSWERING_WARN_EVERY_MS = 60_000;

/** A start given up while it waited for Temporal's answer (shouldStop). */
export class WorkerStartAbandoned extends Error {
  constructor() {
    super('the worker start was given up while it waited for Temporal to answer');
    this.name = 'WorkerStartAbandoned';
  }
}

/**
 * The search attribute check, each try bounded by SEARCH_ATTRIBUTES_CHECK_MS and tried again until Temporal answers:
 * a Temporal that takes the connection and answers nothing (frozen right after the connect, a frontend whose
 * persistence hangs) made the start wait without a limit and without a word, and `armada start` listened on no port
 * meanwhile. Missing attributes end the start at once (SearchAttributesMissing).
 */
async function untilSearchAttributesChecked(connection: NativeConnection, opts: WorkerOptions): Promise<void> {
  let warnedAt: number | undefined;
  for (;;) {
    try {
      await requireSearchAttributesInTime(connection, opts.namespace);
      if (warnedAt !== undefined) opts.logger.info({ address: opts.address }, 'Temporal answered the search attribute check; the workers start polling');
      return;
    } catch (err) {
      // only silence and unavailability are waited out; another refusal (missing attributes, no permission) ends the start
      if (err instanceof SearchAttributesMissing || !WAITED_OUT_CODES.has((err as { code?: unknown }).code)) throw err;
      if (warnedAt === undefined || Date.now() - warnedAt >= NOT_ANSWERING_WARN_EVERY_MS) {
        if (warnedAt === undefined) opts.onTemporalNotAnswering?.();
        warnedAt = Date.now();
        opts.logger.warn(
          { address: opts.address, namespace: opts.namespace, err: { message: (err as Error).message } },
          `Temporal at ${opts.address} took the connection but did not answer the search attribute check of namespace "${opts.namespace}" within ${SEARCH_ATTRIBUTES_CHECK_MS / 1000} s; ` +
            `the workers start polling once it answers (trying again every ${SEARCH_ATTRIBUTES_CHECK_MS / 1000} s). Check that ${opts.address} is the Temporal frontend's gRPC port and that its services and persistence are up (temporal operator cluster health --address ${opts.address})`,
        );
      }
    }
    opts.onWaiting?.(`Temporal at ${opts.address} to answer the search attribute check of namespace "${opts.namespace}" (trying again every ${SEARCH_ATTRIBUTES_CHECK_MS / 1000} s)`);
    await pauseBeforeNextTry(opts);
  }
}

/** The pause before the next try, as long as a try's wait; shouldStop ends it (WorkerStartAbandoned). */
async function pauseBeforeNextTry(opts: WorkerOptions): Promise<void> {
  for (let waited = 0; waited < SEARCH_ATTRIBUTES_CHECK_MS; waited += 500) {
    if (opts.shouldStop?.()) throw new WorkerStartAbandoned();
    await new Promise((r) => setTimeout(r, 500));
  }
  if (opts.shouldStop?.()) throw new WorkerStartAbandoned();
}

/** A connect's failure in a few words: the SDK's message is a Rust debug dump (`tonic::transport::Error(…)`). */
function connectFailure(err: unknown): string {
  const message = (err as Error | undefined)?.message ?? String(err);
  if (/ConnectionRefused|Connection refused/i.test(message)) return 'connection refused';
  if (/dns error|Name or service not known|failed to lookup address/i.test(message)) return 'its host name does not resolve';
  if (/Timeout expired|deadline/i.test(message)) return 'no answer to the connect within 30 s';
  return message.slice(0, 300);
}

/**
 * The connection to Temporal. With untilTemporalConnects a Temporal that cannot be reached yet is tried again until
 * it can (one warning at the first failure, then one a minute); otherwise the start fails with the connect's error.
 */
async function untilConnected(opts: WorkerOptions): Promise<NativeConnection> {
  let warnedAt: number | undefined;
  for (;;) {
    try {
      const connection = await NativeConnection.connect({ address: opts.address });
      if (warnedAt !== undefined) opts.logger.info({ address: opts.address }, 'Temporal took the connection');
      return connection;
    } catch (err) {
      if (!opts.untilTemporalConnects || !isTemporalUnreachable(err)) throw err;
      const reason = connectFailure(err);
      opts.onWaiting?.(`Temporal at ${opts.address} to take the connection (${reason}; trying again every ${SEARCH_ATTRIBUTES_CHECK_MS / 1000} s)`);
      if (warnedAt === undefined || Date.now() - warnedAt >= NOT_ANSWERING_WARN_EVERY_MS) {
        warnedAt = Date.now();
        opts.logger.warn(
          { address: opts.address, err: { message: (err as Error).message } },
          `Temporal at ${opts.address} cannot be reached (${reason}); the workers start polling once it can (trying again every ${SEARCH_ATTRIBUTES_CHECK_MS / 1000} s). Check that TEMPORAL_ADDRESS names the Temporal frontend's gRPC port and that it is up`,
        );
      }
    }
    await pauseBeforeNextTry(opts);
  }
}

export interface RunningWorkers {
  workers: Worker[];
  /** Prunes this host's orphaned attempt worktrees (at start, then every attempts.janitorIntervalMs). */
  janitor: WorktreeJanitor;
  /** Resolves when every worker has stopped; rejects when one fails. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/** Agent runs one worker takes at once when `--max-agents` is not set (docs/operations.md, "Sizing a worker"). */
export const DEFAULT_AGENT_RUNS = 250;

/** How a worker's LISTEN connection shows in pg_stat_activity. */
export const WORKER_LISTENER_APPLICATION_NAME = 'armada-worker-listener';

/** The task queues a worker polls: the ones asked for, else the shared queue and this host's queue. */
export function workerQueues(config: ArmadaConfig, taskQueues?: string[]): string[] {
  const shared = config.temporal.taskQueue;
  return taskQueues?.length ? taskQueues : [shared, hostQueue(shared)];
}

export async function startWorkers(opts: WorkerOptions): Promise<RunningWorkers> {
  opts.onWaiting?.(`Temporal at ${opts.address}`);
  const connection = await untilConnected(opts);
  // workflows start with and upsert Armada's search attributes: without them every workflow task would fail
  await untilSearchAttributesChecked(connection, opts).catch(async (err) => {
    await connection.close();
    throw err;
  });
  opts.onWaiting?.('the workers to start (workflow bundle, PostgreSQL listener, Temporal workers)');
  const worker = workerIdentity(opts.identity);
  const workflowBundle = opts.workflowBundle ?? (await loadWorkflowBundle());
  // one LISTEN connection (no domain events: watch channels and barriers only) for the scheduler's definition cache
  // (activities/scheduler/runDefinitions.ts); without a connection string beginRun reads PostgreSQL every time
  const connectionString = opts.db.options.connectionString;
  const events = connectionString
    ? await createEventListener(connectionString, opts.db, opts.logger, { events: false, applicationName: WORKER_LISTENER_APPLICATION_NAME })
    : undefined;
  const runDefinitions = createRunDefinitions({ db: opts.db, events, metrics: opts.metrics, logger: opts.logger });
  const workInHand = createWorkInHand();
  const activities = createActivities({
    db: opts.db,
    config: opts.config,
    logger: opts.logger,
    metrics: opts.metrics,
    worker,
    agentSlots: opts.maxAgents ? createSlots(opts.maxAgents) : undefined,
    faults: opts.faults,
    runDefinitions,
    workInHand,
  });
  // a scheduled run's first workflow task asks for its definition here, so beginRun finds it read (never on replay)
  const sinks: InjectedSinks<SchedulerSinks> = {
    scheduler: { prefetchDefinition: { fn: (info, workflow) => runDefinitions.prefetch(workflow, `${info.workflowId}/${info.runId}`), callDuringReplay: false } },
  };
  const grace = opts.shutdownGraceMs ?? 10_000;
  const shared = opts.config.temporal.taskQueue;
  const queues = workerQueues(opts.config, opts.taskQueues);
  const concurrency = opts.concurrency ?? 20;
  // an agent run holds a slot of the host queue for as long as its agent runs (minutes to hours, waiting on a child
  // process), so that queue has room for the agents (--max-agents, else DEFAULT_AGENT_RUNS) besides the short git work
  const hostSlots = (opts.maxAgents ?? DEFAULT_AGENT_RUNS) + concurrency;
  const workers = await Promise.all(
    queues.map((taskQueue) =>
      Worker.create({
        connection,
        namespace: opts.namespace,
        taskQueue,
        workflowBundle,
        activities,
        sinks,
        maxConcurrentActivityTaskExecutions: taskQueue === hostQueue(shared) ? hostSlots : concurrency,
        shutdownGraceTime: grace,
        identity: worker.identity,
      }),
    ),
  ).catch(async (err) => {
    await events?.close();
    throw err;
  });
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  // a worker killed outright left its scripts' temp dirs: removed at every start (the janitor below may be off)
  pruneStaleScriptDirs(opts.logger);
  // commands a worker or API process killed outright left running (git clones among them: ARMADA_LAUNCHER=off, or the
  // launcher killed with it), stopped before they race the retries of their activities (lib/process/orphans.ts)
  const orphansStopped = stopOrphanedCommands()
    .then((pids) => {
      if (pids.length) opts.logger.warn({ pids }, `stopped ${pids.length} command(s) left running by a process that was killed`);
    })
    .catch((err) => opts.logger.warn({ err: { message: (err as Error).message } }, 'stopping commands left by a killed process failed'));
  // managed clones made before repository credentials were sealed hold them in their origin's URL (docs/security.md)
  const scrubbed = scrubManagedClones(opts.config.home, opts.logger).catch((err) => opts.logger.warn({ err: { message: (err as Error).message } }, 'cleaning the remote URLs of managed clones failed'));
  // host-local housekeeping: worktrees of deleted attempts on this host's disk (docs/attempts.md#orphaned-worktrees)
  const janitor = startWorktreeJanitor(
    { db: opts.db, config: opts.config, logger: opts.logger, metrics: opts.metrics },
    opts.config.file.attempts?.janitorIntervalMs ?? DEFAULT_JANITOR_INTERVAL_MS,
  );
  let stopping: Promise<void> | undefined;
  return {
    workers,
    janitor,
    done,
    stop() {
      stopping ??= (async () => {
        const graceEnds = Date.now() + grace;
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        await janitor.stop(); // finishes the entry in hand, starts no other
        await scrubbed;
        await orphansStopped;
        await done.catch((err) => opts.logger.warn({ err }, 'worker stopped with an error'));
        // work an activity returned without finishing (a run's start handed over), within the same grace time
        if (!(await workInHand.settle(Math.max(0, graceEnds - Date.now())))) {
          opts.logger.warn('worker stopped with a handed-over run start still waiting for its platform: the next try reports its answer unknown');
        }
        await connection.close();
        await events?.close();
      })();
      return stopping;
    },
  };
}
