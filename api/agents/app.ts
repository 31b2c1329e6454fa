/** The multi-agent service (C): agents, agent tasks and shared memory under /api/v1. */
import { multiAgentSettings, multiAgents } from '../../lib/agents/agentRoster';
import type { DetailServiceDeps } from '../detailServiceDeps';
import { installApiKeyAuth } from '../http/apiKeyAuth';
import { createBaseApp } from '../http/baseApp';
import { AgentActors } from './agentActors';
import { superviseActors } from './actorSupervisor';
import { agentRoutes } from './agents';
import type { AgentsAppDeps } from './deps';
import { memoryRoutes } from './memory';
import { agentTaskRoutes } from './tasks';
import { installCors } from '../http/cors';
import { named } from '../http/pluginName';

export async function buildAgentsApp(base: DetailServiceDeps) {
  // An agent whose llm names no profile is a startup error (ConfigError), not a failed task later.
  const agents = multiAgents(base.config);
  const app = createBaseApp({
    service: 'agents',
    logger: base.logger,
    metrics: base.metrics,
    version: base.config.version,
    requestTimeoutMs: base.config.requestTimeoutMs,
    errorStyle: 'detail',
    dependencies: base.dependencies,
    healthCheck: async () => {
      await base.db.query('SELECT 1');
      return { database: 'ok' };
    },
  });
  await installCors(app, base.config.corsOrigins, 'all');
  installApiKeyAuth(app, { key: base.keys.agents, allowBearer: true });
  const deps: AgentsAppDeps = { ...base, agents, actors: new AgentActors(base.temporal, base.db, base.config, base.logger) };
  await app.register(named(agentRoutes), { prefix: '/api/v1', deps });
  await app.register(named(agentTaskRoutes), { prefix: '/api/v1', deps });
  await app.register(named(memoryRoutes), { prefix: '/api/v1', deps });
  // Every configured agent's actor runs from service start (idempotent: an actor already running is kept); removed
  // agents' actors are closed; tasks whose actor was closed under them are failed.
  let supervisor: { stop(): void } | undefined;
  app.addHook('onReady', async () => {
    supervisor = superviseActors(deps, agents, multiAgentSettings(base.config).actorCheckIntervalMs);
  });
  app.addHook('onClose', async () => supervisor?.stop());
  return app;
}
