/**
 * GET /api/v1/flows: the flows of every source in one list, each naming its source. The sources are asked at once
 * (each with the source timeout); one that cannot answer is reported in `sources[].error` and the rest still list.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { allSources } from '../../lib/db/schedulerSources';
import { PlatformError, listRemoteFlows, type RemoteFlow } from '../../lib/scheduler/platforms';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { sourceTarget } from '../../lib/scheduler/sourceTarget';
import type { SchedulerPluginOptions } from './deps';
import { AllRemoteFlows, DetailErrors } from './schemas';

export const flowRoutes: FastifyPluginAsync<SchedulerPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const settings = schedulerSettings(deps.config);

  app.get('/flows', { schema: { tags: ['sources'], response: { 200: AllRemoteFlows, ...DetailErrors } } }, async () => {
    const sources = await allSources(deps.db);
    const listed = await Promise.all(
      sources.map(async (s): Promise<{ flows: RemoteFlow[]; error: string | null }> => {
        try {
          return { flows: await listRemoteFlows(sourceTarget(s, deps.keys.encryption), settings.sourceTimeoutMs), error: null };
        } catch (err) {
          if (!(err instanceof PlatformError)) throw err;
          return { flows: [], error: err.message };
        }
      }),
    );
    return {
      flows: sources.flatMap((s, i) => (listed[i]?.flows ?? []).map((f) => ({ source_id: s.id, source_name: s.name, source_type: s.source_type, ...f }))),
      sources: sources.map((s, i) => ({ id: s.id, name: s.name, source_type: s.source_type, status: s.status, flows: listed[i]?.flows.length ?? 0, error: listed[i]?.error ?? null })),
    };
  });
};
