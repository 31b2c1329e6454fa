/**
 * How long a multi-agent task's activity (runAgentTask) may run, and so the longest `multiAgent.taskTimeoutMs` that
 * takes effect. Plain data: workflows/agentTaskWorkflow.ts sets the activity's start-to-close timeout with it.
 */
import { POSTGRES_OUTAGE_WAIT_MS } from '../db/outage';

/** runAgentTask's start-to-close timeout: Temporal ends an attempt of the activity after this (24 h). */
export const AGENT_TASK_ACTIVITY_TIMEOUT_MS = 24 * 3_600_000;

/**
 * The longest `multiAgent.taskTimeoutMs` (84 900 000 ms, 23 h 35 min): the activity's 24 h less what an attempt does
 * besides the agent's process: up to two PostgreSQL outage waits before the process starts (marking the task
 * running, the memory search) and 5 minutes to stop the process group (SIGTERM, SIGKILL 3 s later) and report. A
 * longer value never took effect: Temporal timed the attempt out first, a timeout its retry policy retries, so the
 * agent ran again instead of the task failing with `timed out after N ms`. Far below MAX_TIMER_MS (lib/config.ts),
 * the bound of the Node timer the value also reaches.
 */
export const MAX_AGENT_TASK_TIMEOUT_MS = AGENT_TASK_ACTIVITY_TIMEOUT_MS - 2 * POSTGRES_OUTAGE_WAIT_MS - 5 * 60_000;
