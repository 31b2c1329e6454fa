/**
 * Runs one multi-agent task: the agent profile's process in a scratch directory under $ARMADA_HOME/agents/<name>/,
 * in its own process group, with the prompt on stdin and in ARMADA_PROMPT (when it fits in one environment string).
 * Heartbeats while it runs; on cancellation (agent restart) it stops the whole group before reporting cancelled.
 *
 * Result: for a JSON-lines profile `format` the agent's final answer (parsers/finalMessage.ts); for `text`, or when the
 * JSON output has no final answer, the process's stdout with trailing whitespace trimmed. Either is cut to its last
 * 64 KiB. A non-zero exit, a timeout or a process that cannot start is a failed task (not an activity error) whose
 * error names the exit code and the tail of stderr.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { ArmadaConfig } from '../../lib/config';
import { markAgentTaskRunning } from '../../lib/db/agentTasks';
import { searchMemory, type MemoryHit } from '../../lib/db/agentMemory';
import type { Logger } from '../../lib/logger';
import { counter, histogram, type Metrics } from '../../lib/metrics';
import type { Pool } from 'pg';
import { childEnv, envValueThatFits } from '../../lib/process/childEnv';
import { killProcessesUnder, launchGroupProcess } from '../../lib/process/processGroup';
import { createFinalMessage, lastBytes } from '../agent/parsers';
import { resolveAgentCommand } from '../../lib/agents/agentCommand';
import { findMultiAgent, multiAgentSettings } from '../../lib/agents/agentRoster';
import { AGENT_REMOVED } from '../../lib/agents/agentTaskErrors';
import { keepAlive } from '../keepAlive';
import { untilPostgresAnswers } from '../untilPostgresAnswers';
import { groupNice } from '../../lib/process/priority';

export const RESULT_MAX_BYTES = 64 * 1024;
const ERROR_TAIL_BYTES = 2048;

export interface AgentTaskOutcome {
  /** skipped: the task was already finished (a duplicate delivery) or no longer exists */
  status: 'completed' | 'failed' | 'skipped';
  result: string | null;
  error: string | null;
}

interface Deps {
  db: Pool;
  config: ArmadaConfig;
  logger: Logger;
  metrics: Metrics;
}

/** Keeps the last `max` bytes of what is appended to it. */
class Tail {
  private chunks: string[] = [];
  private bytes = 0;
  constructor(private readonly max: number) {}
  push(line: string): void {
    const s = `${line}\n`;
    this.chunks.push(s);
    this.bytes += Buffer.byteLength(s);
    while (this.bytes > this.max && this.chunks.length > 1) this.bytes -= Buffer.byteLength(this.chunks.shift() as string);
  }
  text(): string {
    return lastBytes(this.chunks.join(''), this.max);
  }
}

/**
 * The prompt an agent with `memory: true` receives when the search finds something:
 *
 *     Relevant memory:
 *     - [<agent or "shared">, <createdAt ISO>] <content>
 *     …
 *
 *     Task:
 *     <task text>
 *
 * With no hits (or memory off) the prompt is the task text alone.
 */
export function buildPrompt(task: string, hits: readonly MemoryHit[]): string {
  if (hits.length === 0) return task;
  const lines = hits.map((h) => `- [${h.agent ?? 'shared'}, ${h.created_at.toISOString()}] ${h.content.replace(/\s+/g, ' ').trim()}`);
  return `Relevant memory:\n${lines.join('\n')}\n\nTask:\n${task}`;
}

export async function runAgentTask(deps: Deps, input: { agent: string; taskId: string }): Promise<AgentTaskOutcome> {
  const ctx = Context.current();
  // before the process starts a PostgreSQL outage is waited out here (activities/untilPostgresAnswers.ts): it costs
  // no try of the activity's retry policy, which is kept for a lost worker
  const row = await untilPostgresAnswers(() => markAgentTaskRunning(deps.db, input.taskId));
  if (!row) return { status: 'skipped', result: null, error: null };
  const agent = findMultiAgent(deps.config, input.agent);
  if (!agent) return { status: 'failed', result: null, error: AGENT_REMOVED };
  const command = resolveAgentCommand(deps.config, agent.llm);
  if (!command) return { status: 'failed', result: null, error: `agent profile "${agent.llm}" is not configured` };
  const settings = multiAgentSettings(deps.config);

  const hits = agent.memory && settings.memoryHits > 0 ? (await untilPostgresAnswers(() => searchMemory(deps.db, row.task, { limit: settings.memoryHits }))).hits : [];
  const prompt = buildPrompt(row.task, hits);
  const cwd = path.join(deps.config.home, 'agents', agent.name, 'tasks', input.taskId);
  // A retry after a lost worker (kill -9, crash): that worker's process of this task may still run here (its group
  // is detached); stop it, or the task would have two agents at once. Only the task's runs' processes (started with
  // its ARMADA_TASK_ID, which their children inherit): a user's shell or editor sitting in the directory stays.
  const lost = killProcessesUnder(cwd, { startedWith: { name: 'ARMADA_TASK_ID', value: input.taskId } });
  if (lost.length) deps.logger.warn({ agent: agent.name, taskId: input.taskId, pids: lost }, 'stopped the processes a lost worker left running for this task');
  fs.rmSync(cwd, { recursive: true, force: true }); // a retried attempt starts from an empty directory
  fs.mkdirSync(cwd, { recursive: true });

  const stdout = new Tail(RESULT_MAX_BYTES);
  const final = createFinalMessage(command.format, RESULT_MAX_BYTES);
  const result = () => final.text() ?? stdout.text().trimEnd();
  const stderr = new Tail(ERROR_TAIL_BYTES);
  const started = Date.now();
  ctx.heartbeat();
  try {
    return await keepAlive(
      async () => {
        const proc = await launchGroupProcess({
          command: command.command,
          args: command.args,
          cwd,
          stdin: prompt,
          env: childEnv({
            profileEnv: command.env,
            vars: {
              ARMADA_MODEL: command.model,
              // always whole on stdin; in the environment only when it fits there (a longer one failed the spawn)
              ARMADA_PROMPT: envValueThatFits('ARMADA_PROMPT', prompt),
              ARMADA_TASK_ID: input.taskId,
              ARMADA_AGENT_NAME: agent.name,
              ARMADA_AGENT_ROLE: agent.role,
              ARMADA_AGENT_TOOLS: agent.tools.join(','),
            },
          }),
          signal: ctx.cancellationSignal,
          timeoutMs: settings.taskTimeoutMs,
          nice: groupNice(deps.config),
          onLine: (stream, line) => {
            if (stream === 'stderr') return stderr.push(line);
            stdout.push(line);
            final.line(line);
          },
        });
        const res = await proc.done;
        const outcome: AgentTaskOutcome = res.aborted
          ? { status: 'failed', result: null, error: 'cancelled' }
          : res.spawnError
            ? { status: 'failed', result: null, error: `could not start "${command.command}": ${res.spawnError}` }
            : res.timedOut
              ? { status: 'failed', result: null, error: `timed out after ${settings.taskTimeoutMs} ms` }
              : res.code === 0
                ? { status: 'completed', result: result(), error: null }
                : {
                    status: 'failed',
                    result: result() || null,
                    error: `exit ${res.code === null ? `signal ${res.signal}` : `code ${res.code}`}${stderrSuffix(stderr.text())}`,
                  };
        histogram(deps.metrics.registry, 'armada_agent_task_duration_seconds', 'Duration of multi-agent task processes, by outcome', ['outcome']).observe(
          { outcome: outcome.status },
          (Date.now() - started) / 1000,
        );
        counter(deps.metrics.registry, 'armada_agent_tasks_total', 'Multi-agent tasks run, by outcome', ['outcome']).inc({ outcome: outcome.status });
        if (res.aborted) {
          deps.logger.info({ agent: agent.name, taskId: input.taskId }, 'agent task stopped (cancelled)');
          await ctx.cancelled; // rejects with the CancelledFailure: the workflow sees the activity as cancelled
        }
        return outcome;
      },
      { intervalMs: 1000 },
    );
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

function stderrSuffix(text: string): string {
  const t = text.trim();
  return t ? `: ${t}` : '';
}
