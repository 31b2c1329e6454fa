/** The process's Prometheus registry and the metrics every service shares. Names: `armada_…`, units in names. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'service' | 'method' | 'route' | 'status_code'>;
  httpDuration: Histogram<'service' | 'method' | 'route' | 'status_code'>;
}

/**
 * The process's registry: process metrics (armada_process_…), the worker's metrics when a worker runs in this
 * process, and the HTTP metrics of the service that hosts them (api/services.ts#serviceMetrics).
 */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'armada_process_' });
  return withHttpMetrics(registry);
}

/** A registry of one HTTP service's own: its request metrics and what its routes register; no process metrics. */
export function createServiceMetrics(): Metrics {
  return withHttpMetrics(new Registry());
}

function withHttpMetrics(registry: Registry): Metrics {
  const labelNames = ['service', 'method', 'route', 'status_code'] as const;
  return {
    registry,
    httpRequests: new Counter({ name: 'armada_http_requests_total', help: 'HTTP requests answered, by service, route template and status', labelNames, registers: [registry] }),
    httpDuration: new Histogram({
      name: 'armada_http_request_duration_seconds',
      help: 'HTTP request duration in seconds, by service, route template and status',
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}

/**
 * Get-or-create helpers, so each module declares the metrics it owns next to the code that moves them, and a
 * module loaded twice (tests, several apps in one process) reuses the registered metric instead of throwing.
 */
export function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
  return (registry.getSingleMetric(name) as Counter<L> | undefined) ?? new Counter<L>({ name, help, labelNames, registers: [registry] });
}

export function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  buckets: number[] = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
): Histogram<L> {
  return (registry.getSingleMetric(name) as Histogram<L> | undefined) ?? new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
}

export function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
  return (registry.getSingleMetric(name) as Gauge<L> | undefined) ?? new Gauge<L>({ name, help, labelNames, registers: [registry] });
}
