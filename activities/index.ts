/**
 * All activities, built from their dependencies (db pool, config, logger) so they are testable without Temporal.
 * Every activity is idempotent: Temporal may run it more than once.
 */
import type { WorkInHand } from '../lib/runtime/workInHand';
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../lib/config';
import { withTransaction } from '../lib/db/pool';
import { projectStored, setCloneResult } from '../lib/db/projects';
import type { Logger } from '../lib/logger';
import type { Metrics } from '../lib/metrics';
import type { WorkerIdentity } from '../lib/workerIdentity';
import type { Slots } from '../lib/process/slots';
import type { Faults } from '../lib/faults';
import { lazyEncryptionKey } from '../lib/keys';
import { checkPullRequest } from './codehost/checkPullRequest';
import { cloneRepository, type CloneRepositoryInput } from './git/cloneRepository';
import { removeProjectClone, type RemoveProjectCloneInput } from './git/removeProjectClone';
import { recordAgentTaskResult, type AgentTaskResultInput } from './multiAgent/recordAgentTaskResult';
import { runAgentTask } from './multiAgent/runAgentTask';
import { createApprovalActivities } from './approvals';
import { createFollowUpActivities } from './followUps';
import { createWebhookActivities } from './webhooks';
import { createExecutionProgressActivities } from './scheduler/executionProgress';
import { createSchedulerActivities } from './scheduler/schedulerActivities';
import type { RunDefinitions } from './scheduler/runDefinitions';
import { createAttemptActivities } from './attempts';
import { keepAlive } from './keepAlive';
import { untilPostgresAnswers } from './untilPostgresAnswers';

export interface ActivityDeps {
  db: Pool;
  config: ArmadaConfig;
  logger: Logger;
  /** The process's registry: activities record armada_* metrics here (served on /metrics). */
  metrics: Metrics;
  /** The worker this process is: recorded on process rows. */
  worker: WorkerIdentity;
  /** This worker's cap on concurrent agent processes (`--max-agents`); undefined = only activity slots bound it. */
  agentSlots?: Slots;
  /**
   * The worker's definitions of scheduled runs (cache and prefetch, activities/scheduler/runDefinitions.ts), shared
   * with the worker's `scheduler` sink. Without it beginRun reads PostgreSQL every time.
   */
  runDefinitions?: RunDefinitions;
  /** Test-only failure points after side effects (lib/faults.ts); never set in production. */
  faults?: Faults;
  /** Work returned without finishing that the worker's stop waits for (lib/runtime/workInHand.ts). */
  workInHand?: WorkInHand;
}

export function createActivities(deps: ActivityDeps) {
  const remoteAuth = { db: deps.db, encryptionKey: lazyEncryptionKey(deps.config) };
  return {
    ...createSchedulerActivities(deps),
    ...createExecutionProgressActivities(deps),
    ...createAttemptActivities(deps),
    cloneRepository: (input: CloneRepositoryInput) => cloneRepository(remoteAuth, input),
    /** False when the project no longer exists (deleted while its repository was cloned). */
    recordCloneResult: (input: { projectId: string; ok: boolean; path: string | null; error: string | null }): Promise<boolean> =>
      setCloneResult(deps.db, input.projectId, input.ok, input.path, input.error),
    /** Whether the project was stored, once the transaction that inserted it and started its clone has ended. */
    projectRecordStored: (input: { projectId: string }): Promise<boolean> => withTransaction(deps.db, (c) => projectStored(c, input.projectId)),
    /** Beats every 2 s (the workflows' heartbeat timeout is 15 s): a try lost with its worker is tried again within seconds. */
    removeProjectClone: (input: RemoveProjectCloneInput) => keepAlive(() => untilPostgresAnswers(() => removeProjectClone(deps, input))),
    runAgentTask: (input: { agent: string; taskId: string }) => runAgentTask(deps, input),
    recordAgentTaskResult: (input: AgentTaskResultInput) => recordAgentTaskResult(deps, input),
    ...createApprovalActivities(deps),
    ...createFollowUpActivities(deps),
    ...createWebhookActivities(deps),
    checkPullRequest: (input: { attemptId: string }) => checkPullRequest(deps, input.attemptId),
  };
}

export type Activities = ReturnType<typeof createActivities>;
