/**
 * The scheduler's metrics. `workflow` and `source` labels carry user-chosen names: their cardinality is the number of
 * workflows / sources an operator defines (bounded by the operator, never by traffic); ids are never labels.
 */
import { counter, gauge, histogram, type Metrics } from '../metrics';

export function schedulerMetrics(m: Metrics) {
  return {
    executions: counter(m.registry, 'armada_scheduler_executions_total', 'Workflow executions by workflow and status (started, completed, failed, stopped)', [
      'workflow',
      'status',
    ] as const),
    duration: histogram(m.registry, 'armada_scheduler_execution_duration_seconds', 'Duration of finished workflow executions in seconds, by final status', ['status'] as const),
    lag: histogram(
      m.registry,
      'armada_scheduler_schedule_lag_seconds',
      'Schedule lag: actual start of a scheduled execution minus the time its Schedule meant to start it (cron time plus jitter), in seconds',
      [],
      [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
    ),
    definitionCache: counter(
      m.registry,
      'armada_scheduler_definition_cache_total',
      "Run starts (beginRun) by how the definition was read: hit (the worker's cache), miss (PostgreSQL, then kept), bypass (PostgreSQL: the cache's LISTEN connection was down)",
      ['outcome'] as const,
    ),
    sourceHealthy: gauge(m.registry, 'armada_scheduler_source_healthy', '1 when the source passed its last health check, 0 when it failed', ['source', 'source_type'] as const),
  };
}

export type SchedulerMetrics = ReturnType<typeof schedulerMetrics>;
