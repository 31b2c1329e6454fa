/** Agent task routes: POST /tasks (assign), GET /tasks/{taskId}, GET /tasks (agent, status, limit, offset). */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError, notFound } from '../../lib/errors';
import { AGENT_REMOVED } from '../../lib/agents/agentTaskErrors';
import { newId } from '../../lib/ids';
import { failUnqueuedAgentTask, getAgentTask, insertAgentTask, listAgentTasks, type AgentTaskRow } from '../../lib/db/agentTasks';
import { normalisePriority } from '../../workflows/agentMessages';
import { NON_BLANK_TEXT_PATTERN } from '../http/inputPolicy';
import { Id, Offset, StringEnum } from '../http/schemas';
import { deliverAssignment } from './assignments';
import type { AgentsPluginOptions } from './deps';
import { isAgentRemoved, requireServedAgent, whileListed } from './removedAgents';
import { AgentName, AgentTask, DetailErrorResponses, PRIORITY_INPUTS, TASK_STATUS_VALUES } from './schemas';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function agentTaskView(t: AgentTaskRow) {
  return {
    taskId: t.id,
    agent: t.agent,
    task: t.task,
    priority: t.priority,
    status: t.status,
    result: t.result,
    error: t.error,
    createdAt: t.created_at.toISOString(),
    startedAt: iso(t.started_at),
    completedAt: iso(t.completed_at),
  };
}

const AssignBody = Type.Object(
  {
    agent: AgentName,
    task: Type.String({ minLength: 1, maxLength: 100_000, pattern: NON_BLANK_TEXT_PATTERN, description: 'the prompt; not blank (only white space); no control characters but tab and line breaks' }),
    priority: Type.Optional(StringEnum(PRIORITY_INPUTS, { default: 'normal', description: '`medium` is an alias of `normal`' })),
  },
  { additionalProperties: false },
);

const ListQuery = Type.Object(
  {
    agent: Type.Optional(AgentName),
    status: Type.Optional(StringEnum(TASK_STATUS_VALUES)),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
    offset: Offset,
  },
  { additionalProperties: false },
);

export const agentTaskRoutes: FastifyPluginAsync<AgentsPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/tasks', { schema: { body: AssignBody, response: { 201: AgentTask, ...DetailErrorResponses } } }, async (request, reply) => {
    const { agent: name, task } = request.body;
    const agent = await requireServedAgent(deps, name);
    const priority = normalisePriority(request.body.priority);
    // written while no newer roster can remove the agent: a removal then finds the row and fails it
    const row = await whileListed(deps.db, agent.name, (c) => insertAgentTask(c, { id: newId(), agent: agent.name, task, priority }));
    try {
      await deliverAssignment(deps, row);
    } catch (err) {
      const message = (err as Error).message;
      const removed = isAgentRemoved(err); // between the insert and the signal, and its actor closed: not started again
      // Fail the row, so that a signal that timed out but lands later runs nothing (the actor skips a finished row)…
      const failed = await failUnqueuedAgentTask(deps.db, row.id, removed ? AGENT_REMOVED : `could not be queued: ${message}`).catch(() => undefined);
      if (removed) throw err;
      if (failed !== false) throw new AppError(503, 'SERVICE_UNAVAILABLE', `Agent runtime unavailable: ${message}`);
      // …unless the service's lost-assignment check sent it while this request waited: it is queued, or runs, or ran.
      request.log.info({ taskId: row.id, err: { message } }, 'the assignment was sent by the lost-assignment check while its own signal failed');
      return reply.code(201).send(agentTaskView((await getAgentTask(deps.db, row.id)) ?? row));
    }
    return reply.code(201).send(agentTaskView(row));
  });

  app.get(
    '/tasks/:taskId',
    { schema: { params: Type.Object({ taskId: Id() }), response: { 200: AgentTask, ...DetailErrorResponses } } },
    async (request) => {
      const row = await getAgentTask(deps.db, request.params.taskId);
      if (!row) throw notFound('Task not found');
      return agentTaskView(row);
    },
  );

  app.get(
    '/tasks',
    {
      schema: {
        querystring: ListQuery,
        response: { 200: Type.Object({ tasks: Type.Array(AgentTask), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }), ...DetailErrorResponses },
      },
    },
    async (request) => {
      const { agent, status, limit, offset } = request.query;
      const { rows, total } = await listAgentTasks(deps.db, { agent, status }, limit, offset);
      return { tasks: rows.map(agentTaskView), total, limit, offset };
    },
  );
};
