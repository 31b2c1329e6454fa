/** Builds and runs the HTTP services of one process: any of task, scheduler (two ports), agents, traces. */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { ConfigError, type ArmadaConfig } from '../lib/config';
import { localUrl } from '../lib/hostAddress';
import type { ResolvedKeys } from '../lib/keys';
import type { Logger } from '../lib/logger';
import { createServiceMetrics, type Metrics } from '../lib/metrics';
import type { TemporalHandle } from '../lib/temporal/client';
import { releasedWhenDown } from '../lib/db/releasedWhenDown';
import type { DependencyState } from '../lib/runtime/dependencies';
import { gitUserEmail } from './http/actingUser';
import { buildAgentsApp } from './agents/app';
import { buildSchedulerApp } from './scheduler/app';
import { buildTaskApp } from './task/app';
import { buildTracesApp } from './traces/app';

export const SERVICE_NAMES = ['task', 'scheduler', 'agents', 'traces'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export interface ServiceDeps {
  db: Pool;
  config: ArmadaConfig;
  keys: ResolvedKeys;
  temporal: TemporalHandle;
  logger: Logger;
  metrics: Metrics;
  /** What is down right now (`armada start`, `armada api`); unset = not tracked. */
  dependencies?: DependencyState;  /** Another listener of a service this process already runs (the scheduler's second port): no background work. */
  secondListener?: boolean;
}

export interface RunningServices {
  /** name → the address it listens on */
  addresses: Record<string, string>;
  apps: FastifyInstance[];
  close(): Promise<void>;
}

/**
 * Each service's /metrics serves only its own series: one registry per service. The process registry (process
 * metrics, and the worker's when `armada start` runs one in this process) goes with the task service, or with the
 * first service named when the task service does not run here. docs/metrics.md
 */
export function serviceMetrics(names: readonly ServiceName[], processMetrics: Metrics): Record<ServiceName, Metrics> {
  const host = names.includes('task') ? 'task' : names[0];
  const out = {} as Record<ServiceName, Metrics>;
  for (const name of names) out[name] = name === host ? processMetrics : createServiceMetrics();
  return out;
}

/**
 * Builds the app of one service with `deps.metrics` as its registry (see serviceMetrics). With dependency tracking, its
 * requests waiting on PostgreSQL are released with a 503 when it is called down (lib/db/releasedWhenDown.ts).
 */
export async function buildService(name: ServiceName, given: ServiceDeps): Promise<FastifyInstance> {
  const deps = given.dependencies ? { ...given, db: releasedWhenDown(given.db, given.dependencies) } : given;
  switch (name) {
    case 'task':
      return buildTaskApp({ db: deps.db, config: deps.config, temporal: deps.temporal, logger: deps.logger, keys: deps.keys, localUser: gitUserEmail(), dependencies: deps.dependencies }, deps.metrics);
    case 'scheduler':
      return buildSchedulerApp(deps);
    case 'agents':
      return buildAgentsApp(deps);
    case 'traces':
      return buildTracesApp(deps);
  }
}

export async function startServices(names: readonly ServiceName[], deps: ServiceDeps): Promise<RunningServices> {
  const { config } = deps;
  const listeners: { name: string; port: number; variable: string }[] = [];
  for (const name of names) {
    if (name === 'scheduler') {
      listeners.push({ name: 'scheduler', port: config.ports.scheduler, variable: 'ARMADA_SCHEDULER_PORT' });
      if (config.ports.schedulerAlt !== null) listeners.push({ name: 'scheduler-alt', port: config.ports.schedulerAlt, variable: 'ARMADA_SCHEDULER_ALT_PORT' });
    } else listeners.push({ name, port: config.ports[name], variable: `ARMADA_${name.toUpperCase()}_PORT` });
  }
  const metrics = serviceMetrics(names, deps.metrics);
  const apps: FastifyInstance[] = [];
  const addresses: Record<string, string> = {};
  const close = async () => {
    await Promise.allSettled(apps.map((a) => a.close()));
  };
  try {
    for (const l of listeners) {
      const name = l.name === 'scheduler-alt' ? 'scheduler' : (l.name as ServiceName);
      const app = await buildService(name, { ...deps, metrics: metrics[name], secondListener: l.name === 'scheduler-alt' });
      apps.push(app);
      await app.listen({ host: config.host, port: l.port }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EADDRINUSE') throw err;
        throw new ConfigError(`port ${l.port} on ${config.host} (the ${l.name} service) is in use: stop what listens there, or set ${l.variable} to a free port`);
      });
      // where a client on this host reaches it (Fastify's own answer is http://[::]:port for a bind to ::)
      addresses[l.name] = localUrl(config.host, (app.server.address() as AddressInfo).port);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { addresses, apps, close };
}
