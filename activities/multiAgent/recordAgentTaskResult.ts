/**
 * Records a multi-agent task's outcome on its row and, for an agent with `memory: true` whose task completed with a
 * non-empty result, stores that result as a memory entry, in one transaction. Idempotent: a row already finished is
 * left alone and no second memory is written.
 */
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../../lib/config';
import { finishAgentTask, getAgentTask } from '../../lib/db/agentTasks';
import { insertMemory } from '../../lib/db/agentMemory';
import { withTransaction } from '../../lib/db/pool';
import { newId } from '../../lib/ids';
import { findMultiAgent } from '../../lib/agents/agentRoster';

export interface AgentTaskResultInput {
  agent: string;
  taskId: string;
  status: 'completed' | 'failed';
  result: string | null;
  error: string | null;
}

export async function recordAgentTaskResult(deps: { db: Pool; config: ArmadaConfig }, input: AgentTaskResultInput): Promise<void> {
  const agent = findMultiAgent(deps.config, input.agent);
  await withTransaction(deps.db, async (c) => {
    const changed = await finishAgentTask(c, input.taskId, { status: input.status, result: input.result, error: input.error });
    if (!changed || input.status !== 'completed' || !agent?.memory || !input.result?.trim()) return;
    const row = await getAgentTask(c, input.taskId);
    await insertMemory(c, {
      id: newId(),
      content: input.result,
      agent: input.agent,
      metadata: { source: 'agent-task', taskId: input.taskId, task: firstCharacters(row?.task ?? '', 500) },
    });
  });
}

/** The first `n` characters (code points, as the API counts a task's length): no astral character cut in half. */
function firstCharacters(text: string, n: number): string {
  return Array.from(text.slice(0, 2 * n))
    .slice(0, n)
    .join('');
}
