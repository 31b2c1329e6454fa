/** Agent routes: GET /agents, GET /agents/{name}/status, POST /agents/{name}/restart. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError, isAppError } from '../../lib/errors';
import { runningAgentTaskId } from '../../lib/db/agentTasks';
import type { AgentStatus } from '../../workflows/agentMessages';
import { Nullable, StringEnum, Timestamp } from '../http/schemas';
import type { AgentsAppDeps, AgentsPluginOptions } from './deps';
import { requireServedAgent, servedAgents } from './removedAgents';
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

/**
 * The task a restart fails, as of the request (it may finish in the meantime): the actor's current task when its
 * status query answers (it names the task as it hands it over, before the row reads `running`), else the agent's
 * `running` row in PostgreSQL. When neither answers, nobody can say: 503, and no restart is sent.
 */
async function taskARestartFails(deps: AgentsAppDeps, name: string): Promise<string | null> {
  const [actor, row] = await Promise.allSettled([deps.actors.status(name), runningAgentTaskId(deps.db, name)]);
  if (actor.status === 'fulfilled') return actor.value?.currentTask ?? null;
  if (row.status === 'fulfilled') return row.value ?? null;
  const why = (r: unknown) => (r as Error).message;
  throw unavailable(new Error(`which task the restart would fail is unknown (actor: ${why(actor.reason)}; database: ${why(row.reason)})`));
}

export const agentRoutes: FastifyPluginAsync<AgentsPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/agents',
    { schema: { response: { 200: Type.Object({ agents: Type.Array(Agent), total: Type.Integer() }), ...DetailErrorResponses } } },
    async () => {
      const agents = await Promise.all(
        (await servedAgents(deps)).map(async (a) => {
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
    const agent = await requireServedAgent(deps, request.params.name);
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
          200: Type.Object({
            name: Type.String(),
            status: Type.Literal('restarting'),
            restartedAt: Timestamp,
            failedTask: Nullable(
              Type.String({
                description:
                  "The task running when the request arrived, which the restart fails: the actor's current task, or when the actor cannot answer, the agent's running task in the database (neither answering: 503)",
              }),
            ),
          }),
          ...DetailErrorResponses,
        },
      },
    },
    async (request) => {
      const agent = await requireServedAgent(deps, request.params.name);
      const failedTask = await taskARestartFails(deps, agent.name);
      try {
        await deps.actors.restart(agent.name);
      } catch (err) {
        if (isAppError(err)) throw err; // removed by a newer roster meanwhile: its actor is not started again
        throw unavailable(err);
      }
      request.log.info({ agent: agent.name, failedTask }, 'agent restarted');
      return { name: agent.name, status: 'restarting' as const, restartedAt: new Date().toISOString(), failedTask };
    },
  );
};
