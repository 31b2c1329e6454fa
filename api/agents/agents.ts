/** Agent routes: GET /agents, GET /agents/{name}/status, POST /agents/{name}/restart. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError, notFound } from '../../lib/errors';
import type { AgentStatus } from '../../workflows/agentMessages';
import { Nullable, StringEnum, Timestamp } from '../http/schemas';
import type { AgentsAppDeps, AgentsPluginOptions } from './deps';
import { formatUptime } from './format';
import { AgentName, DetailErrorResponses } from './schemas';

const AGENT_STATES = ['active', 'inactive', 'unknown'] as const;

const Agent = Type.Object({
  name: Type.String(),
  role: Type.String(),
  llm: Type.String(),
  status: StringEnum(AGENT_STATES),
  memory: Type.Boolean(),
  tools: Type.Array(Type.String()),
});

const AgentStatusView = Type.Object({
  name: Type.String(),
  status: StringEnum(AGENT_STATES),
  currentTask: Nullable(Type.String()),
  currentTaskStartedAt: Nullable(Timestamp),
  tasksCompleted: Type.Integer(),
  tasksFailed: Type.Integer(),
  queued: Type.Integer(),
  uptime: Type.String(),
  startedAt: Nullable(Timestamp),
  restarts: Type.Integer(),
});

const NameParams = Type.Object({ name: AgentName });

function requireAgent(deps: AgentsAppDeps, name: string) {
  const agent = deps.agents.find((a) => a.name === name);
  if (!agent) throw notFound(`Agent '${name}' not found`);
  return agent;
}

const unavailable = (err: unknown) => new AppError(503, 'SERVICE_UNAVAILABLE', `Agent runtime unavailable: ${(err as Error).message}`);

function statusView(name: string, s: AgentStatus | null) {
  if (!s) {
    return { name, status: 'inactive' as const, currentTask: null, currentTaskStartedAt: null, tasksCompleted: 0, tasksFailed: 0, queued: 0, uptime: '0s', startedAt: null, restarts: 0 };
  }
  return {
    name,
    status: 'active' as const,
    currentTask: s.currentTask,
    currentTaskStartedAt: s.currentTaskStartedAt,
    tasksCompleted: s.tasksCompleted,
    tasksFailed: s.tasksFailed,
    queued: s.queued,
    uptime: formatUptime(Date.now() - new Date(s.startedAt).getTime()),
    startedAt: s.startedAt,
    restarts: s.restarts,
  };
}

export const agentRoutes: FastifyPluginAsync<AgentsPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/agents',
    { schema: { response: { 200: Type.Object({ agents: Type.Array(Agent), total: Type.Integer() }), ...DetailErrorResponses } } },
    async () => {
      const agents = await Promise.all(
        deps.agents.map(async (a) => {
          let status: (typeof AGENT_STATES)[number];
          try {
            status = (await deps.actors.status(a.name)) ? 'active' : 'inactive';
          } catch {
            status = 'unknown';
          }
          return { name: a.name, role: a.role, llm: a.llm, status, memory: a.memory, tools: a.tools };
        }),
      );
      return { agents, total: agents.length };
    },
  );

  app.get('/agents/:name/status', { schema: { params: NameParams, response: { 200: AgentStatusView, ...DetailErrorResponses } } }, async (request) => {
    const agent = requireAgent(deps, request.params.name);
    let s: AgentStatus | null;
    try {
      s = await deps.actors.status(agent.name);
    } catch (err) {
      throw unavailable(err);
    }
    return statusView(agent.name, s);
  });

  app.post(
    '/agents/:name/restart',
    {
      schema: {
        params: NameParams,
        response: {
          200: Type.Object({ name: Type.String(), status: Type.Literal('restarting'), restartedAt: Timestamp, failedTask: Nullable(Type.String()) }),
          ...DetailErrorResponses,
        },
      },
    },
    async (request) => {
      const agent = requireAgent(deps, request.params.name);
      // Best effort: the task the restart fails is the one running now (it may finish in the meantime).
      const before = await deps.actors.status(agent.name).catch(() => null);
      try {
        await deps.actors.restart(agent.name);
      } catch (err) {
        throw unavailable(err);
      }
      request.log.info({ agent: agent.name, failedTask: before?.currentTask ?? null }, 'agent restarted');
      return { name: agent.name, status: 'restarting' as const, restartedAt: new Date().toISOString(), failedTask: before?.currentTask ?? null };
    },
  );
};
