/**
 * The API side of the agent actors: starts `agent:<name>` workflows idempotently (start with the USE_EXISTING
 * id-conflict policy; never for an agent a newer roster removed), signals them, asks them for their status, fails the tasks an actor that was closed under them
 * left behind (an actor is never started again with its predecessor's tasks still unfinished), and lists and closes
 * the running ones (those of agents removed from the configuration).
 */
import { WorkflowIdConflictPolicy, WorkflowNotFoundError } from '@temporalio/common';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Pool } from 'pg';
import { failUnfinishedAgentTasks } from '../../lib/db/agentTasks';
import type { ArmadaConfig } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import type { TemporalHandle } from '../../lib/temporal/client';
import { requestCancel } from '../../lib/temporal/workflowHandles';
import { multiAgentSettings } from '../../lib/agents/agentRoster';
import { ArmadaAgent } from '../../lib/temporal/searchAttributes';
import { assignSignal, restartSignal, statusQuery, type AgentPriority, type AgentStatus, type AgentWorkflowInput } from '../../workflows/agentMessages';
import { closedActor } from './closedActor';
import { whileListed } from './removedAgents';

const WORKFLOW_ID_PREFIX = 'agent:';
export const agentWorkflowId = (name: string): string => `${WORKFLOW_ID_PREFIX}${name}`;

const STATUS_TIMEOUT_MS = 5000;
/**
 * How long a start or signal may wait for Temporal: one that takes the connection but does not answer (frozen,
 * stalled) is then a 503, not a request left hanging for as long as it stays silent.
 */
const SIGNAL_TIMEOUT_MS = 10_000;

export class AgentActors {
  constructor(
    private readonly temporal: TemporalHandle,
    private readonly db: Pool,
    private readonly config: ArmadaConfig,
    private readonly logger: Logger,
  ) {}

  private startOptions(agent: string) {
    const input: AgentWorkflowInput = { agent, continueAsNewEvery: multiAgentSettings(this.config).continueAsNewEvery };
    return {
      workflowId: agentWorkflowId(agent),
      taskQueue: this.config.temporal.taskQueue,
      args: [input] as [AgentWorkflowInput],
      typedSearchAttributes: [{ key: ArmadaAgent, value: agent }],
    };
  }

  /**
   * Starts the actor unless it already runs. Rejects with a 404 (AGENT_REMOVED) when a newer roster removed the agent;
   * a removal waits until a start under way is done, and then closes that actor.
   */
  async ensure(agent: string): Promise<void> {
    const client = await this.temporal.client();
    await whileListed(this.db, agent, () =>
      withDeadline(client, () =>
        client.workflow.start('agentWorkflow', { ...this.startOptions(agent), workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING }),
      ),
    );
  }

  /** Queues a task on the agent's actor, starting the actor when it is not running. */
  async assign(agent: string, taskId: string, priority: AgentPriority): Promise<void> {
    await this.signal(agent, (h) => h.signal(assignSignal, { taskId, priority }), taskId);
  }

  async restart(agent: string): Promise<void> {
    await this.signal(agent, (h) => h.signal(restartSignal));
  }

  /**
   * Signals the agent's running actor. When none runs (terminated by hand, or never started), the tasks a closed one
   * left are failed first (all but `assigning`, the task being sent now), then an actor is started and signalled.
   */
  private async signal(agent: string, send: (handle: WorkflowHandle) => Promise<void>, assigning?: string): Promise<void> {
    const client = await this.temporal.client();
    const handle = client.workflow.getHandle(agentWorkflowId(agent)); // no run id: the latest run, the new one too
    try {
      await withDeadline(client, () => send(handle));
      return;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    await this.failOrphans(agent, assigning);
    await this.ensure(agent);
    await withDeadline(client, () => send(handle));
  }

  /**
   * When the agent's actor is closed, fails its unfinished tasks assigned before it closed (the closed actor held
   * them; nothing would run them) with how it ended, e.g. `agent actor terminated: <reason>`. Returns their ids.
   */
  async failOrphans(agent: string, except?: string): Promise<string[]> {
    const client = await this.temporal.client();
    const closed = await withDeadline(client, () => closedActor(client, agentWorkflowId(agent)));
    if (!closed) return [];
    const ids = await failUnfinishedAgentTasks(this.db, agent, closed.error, { createdBefore: closed.closedAt, except });
    if (ids.length) this.logger.warn({ agent, taskIds: ids, error: closed.error }, 'agent actor closed under unfinished tasks: they are failed');
    return ids;
  }

  /** The actor's status; null when it is not running. Rejects when Temporal does not answer in time. */
  async status(agent: string): Promise<AgentStatus | null> {
    const client: Client = await this.temporal.client();
    const handle = client.workflow.getHandle(agentWorkflowId(agent));
    try {
      // A closed run (terminated, say) still answers queries through replay: only a running actor is "active".
      const description = await withTimeout(handle.describe(), STATUS_TIMEOUT_MS, `agent "${agent}" could not be described in time`);
      if (description.status.name !== 'RUNNING') return null;
      return await withTimeout(handle.query(statusQuery), STATUS_TIMEOUT_MS, `agent "${agent}" did not answer its status query in time`);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
  }

  /** The agents whose actor runs on this deployment's task queue (Temporal's visibility, so seconds behind at most). */
  async runningActors(): Promise<string[]> {
    const client = await this.temporal.client();
    return withDeadline(client, async () => {
      const names: string[] = [];
      for await (const w of client.workflow.list({ query: "WorkflowType = 'agentWorkflow' AND ExecutionStatus = 'Running'" })) {
        if (w.taskQueue === this.config.temporal.taskQueue && w.workflowId.startsWith(WORKFLOW_ID_PREFIX)) names.push(w.workflowId.slice(WORKFLOW_ID_PREFIX.length));
      }
      return names;
    });
  }

  /**
   * Closes an actor by cancelling its workflow: the task it runs is cancelled first (its process group stopped, as on
   * a restart), then the actor ends Cancelled. False when it was not running, or runs on another deployment's task
   * queue (a shared namespace).
   */
  async close(agent: string): Promise<boolean> {
    const client = await this.temporal.client();
    return withDeadline(client, async () => {
      const d = await client.workflow
        .getHandle(agentWorkflowId(agent))
        .describe()
        .catch((err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        });
      if (d?.status.name !== 'RUNNING' || d.taskQueue !== this.config.temporal.taskQueue) return false;
      return requestCancel(client, agentWorkflowId(agent));
    });
  }
}

function withDeadline<T>(client: Client, fn: () => Promise<T>): Promise<T> {
  return client.connection.withDeadline(Date.now() + SIGNAL_TIMEOUT_MS, fn);
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
