/** Shared memory routes: POST /memory, GET /memory/search (full-text, relevance 0..1), GET /memory/stats. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { newId } from '../../lib/ids';
import { insertMemory, memoryStats, searchMemory, type MemoryRow } from '../../lib/db/agentMemory';
import { NON_BLANK_TEXT_PATTERN } from '../http/inputPolicy';
import { Offset } from '../http/schemas';
import type { AgentsPluginOptions } from './deps';
import { formatBytes } from './format';
import { AgentName, DetailErrorResponses, MemoryEntry } from './schemas';

function memoryView(m: MemoryRow) {
  return { id: m.id, content: m.content, agent: m.agent, metadata: m.metadata, createdAt: m.created_at.toISOString() };
}

const StoreBody = Type.Object(
  {
    content: Type.String({ minLength: 1, maxLength: 65_536, pattern: NON_BLANK_TEXT_PATTERN, description: 'not blank (only white space): it could never be found; no control characters but tab and line breaks' }),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    agent: Type.Optional(AgentName),
  },
  { additionalProperties: false },
);

const SearchQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 1000 }),
    agent: Type.Optional(AgentName),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
    offset: Offset,
  },
  { additionalProperties: false },
);

const SearchHit = Type.Object({ ...MemoryEntry.properties, relevance: Type.Number({ minimum: 0, maximum: 1 }) });

export const memoryRoutes: FastifyPluginAsync<AgentsPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/memory', { schema: { body: StoreBody, response: { 201: MemoryEntry, ...DetailErrorResponses } } }, async (request, reply) => {
    const { content, metadata, agent } = request.body;
    const row = await insertMemory(deps.db, { id: newId(), content, agent: agent ?? null, metadata: metadata ?? {} });
    return reply.code(201).send(memoryView(row));
  });

  app.get(
    '/memory/search',
    {
      schema: {
        querystring: SearchQuery,
        response: { 200: Type.Object({ results: Type.Array(SearchHit), total: Type.Integer(), query: Type.String() }), ...DetailErrorResponses },
      },
    },
    async (request) => {
      const { q, agent, limit, offset } = request.query;
      const { hits, total } = await searchMemory(deps.db, q, { agent, limit, offset });
      return { results: hits.map((h) => ({ ...memoryView(h), relevance: h.relevance })), total, query: q };
    },
  );

  app.get(
    '/memory/stats',
    {
      schema: {
        response: {
          200: Type.Object({
            totalEntries: Type.Integer(),
            byAgent: Type.Record(Type.String(), Type.Integer()),
            sharedEntries: Type.Integer(),
            storageSize: Type.String(),
            storageBytes: Type.Integer(),
          }),
          ...DetailErrorResponses,
        },
      },
    },
    async () => {
      const s = await memoryStats(deps.db);
      return { totalEntries: s.totalEntries, byAgent: s.byAgent, sharedEntries: s.sharedEntries, storageSize: formatBytes(s.storageBytes), storageBytes: s.storageBytes };
    },
  );
};
