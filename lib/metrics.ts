/** The process's Prometheus registry and the metrics every service shares. Names: `armada_…`, units in names. */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'service' | 'method' | 'route' | 'status_code'>;
  httpDuration: Histogram<'service' | 'method' | 'route' | 'status_code'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'armada_process_' });
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
