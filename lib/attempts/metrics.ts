/** The attempt engine's Prometheus metrics (no ids as labels; llm names are a small configured set). */
import type { Registry } from 'prom-client';
import { counter, gauge, histogram } from '../metrics';

export function attemptMetrics(registry: Registry) {
  return {
    /** status: started (counted by the API process whose confirmation finished the start), completed, failed, cancelled (by whoever recorded it) */
    attempts: counter(registry, 'armada_attempts_total', 'Attempts reaching each state (started, completed, failed, cancelled), by agent', ['llm', 'status']),
    duration: histogram(registry, 'armada_attempt_duration_seconds', 'Attempt duration from start to completion, by agent and status', ['llm', 'status']),
    queueWait: histogram(registry, 'armada_attempt_queue_wait_seconds', 'Time from an attempt start request to its agent process starting, by agent', ['llm'], [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]),
    tokens: counter(registry, 'armada_agent_tokens_total', 'Tokens reported by agents, by agent and direction', ['llm', 'direction']),
    cost: counter(registry, 'armada_agent_cost_usd_total', 'Agent cost in USD (reported or priced), by agent', ['llm']),
    running: gauge(registry, 'armada_agent_processes_running', 'Agent processes running in this worker, by agent', ['llm']),
  };
}
export type AttemptMetrics = ReturnType<typeof attemptMetrics>;
