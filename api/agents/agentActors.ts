/**
 * The API side of the agent actors: starts `agent:<name>` workflows idempotently (signalWithStart, or start with the
 * USE_EXISTING id-conflict policy) and asks them for their status.
 */
import { WorkflowIdConflictPolicy, WorkflowNotFoundError } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { unfinishedAgentTasks } from '../../lib/db/agentTasks';
import type { ArmadaConfig } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import type { TemporalHandle } from '../../lib/temporal/client';
import { multiAgentSettings, type MultiAgent } from '../../lib/agents/agentRoster';
import { ArmadaAgent } from '../../lib/temporal/searchAttributes';
import { assignSignal, restartSignal, statusQuery, type AgentPriority, type AgentStatus, type AgentWorkflowInput } from '../../workflows/agentMessages';

export const agentWorkflowId = (name: string): string => `agent:${name}`;

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

  /** Starts the actor unless it already runs. */
  async ensure(agent: string): Promise<void> {
    const client = await this.temporal.client();
    await withDeadline(client, () =>
      client.workflow.start('agentWorkflow', { ...this.startOptions(agent), workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING }),
    );
  }

  /** Queues a task on the agent's actor, starting the actor when it is not running. */
  async assign(agent: string, taskId: string, priority: AgentPriority): Promise<void> {
    const client = await this.temporal.client();
    await withDeadline(client, () => client.workflow.signalWithStart('agentWorkflow', { ...this.startOptions(agent), signal: assignSignal, signalArgs: [{ taskId, priority }] }));
  }

  async restart(agent: string): Promise<void> {
    const client = await this.temporal.client();
    await withDeadline(client, () => client.workflow.signalWithStart('agentWorkflow', { ...this.startOptions(agent), signal: restartSignal, signalArgs: [] }));
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

  /**
   * Starts every configured agent's actor in the background, retrying while Temporal is unreachable, until stop()
   * is called, and re-sends the agent's unfinished tasks (an assignment lost between the row's insert and its
   * signal, or a run whose actor was terminated): the actor ignores ids it already holds, and a finished row is
   * never run again. The API answers meanwhile; a task assignment starts its actor on its own anyway.
   */
  startAll(agents: readonly MultiAgent[]): { stop(): void } {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const pending = new Set(agents.map((a) => a.name));
    const attempt = async (delay: number) => {
      for (const name of [...pending]) {
        if (stopped) return;
        try {
          await this.ensure(name);
          for (const t of await unfinishedAgentTasks(this.db, name)) await this.assign(name, t.id, t.priority);
          pending.delete(name);
        } catch (err) {
          this.logger.warn({ agent: name, err: { message: (err as Error).message } }, 'could not start agent actor; retrying');
        }
      }
      if (pending.size && !stopped) {
        timer = setTimeout(() => void attempt(Math.min(delay * 2, 30_000)), delay);
        timer.unref();
      }
    };
    void attempt(1000);
    return {
      stop() {
        stopped = true;
        if (timer) clearTimeout(timer);
      },
    };
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
