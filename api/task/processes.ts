/** Execution process routes: /api/processes…, /api/execution-processes/:id/stop. */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { endProcess } from './attemptService';
import { checkLogCursor } from '../../lib/attempts/logCursor';
import { logLine, streamLogRows } from '../../lib/attempts/logStream';
import { getProcess, listProcesses, metricSamples } from '../../lib/db/processes';
import { notFound } from '../../lib/errors';
import { ok, okPage, pagination } from '../http/envelope';
import { Envelope, ErrorResponses, IdParams, PagedEnvelope } from '../http/schemas';
import { CancelledProcess, NdjsonBody, Process, ProcessListQuery, ProcessLogsQuery, ProcessMetrics, StoppedProcess } from './attemptSchemas';
import { processDuration, processView } from './attemptViews';
import { sendNdjson, serviceDeps } from './attempts';
import type { TaskPluginOptions } from './deps';

export const processRoutes: FastifyPluginAsync<TaskPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const version = deps.config.version;
  const svc = serviceDeps(deps);

  const requireProcess = async (id: string) => {
    const p = await getProcess(deps.db, id);
    if (!p) throw notFound(`Process ${id} not found`);
    return p;
  };

  app.get('/processes', { schema: { tags: ['processes'], querystring: ProcessListQuery, response: { 200: PagedEnvelope(Process), ...ErrorResponses } } }, async (request) => {
    const q = request.query;
    const { rows, total } = await listProcesses(deps.db, { status: q.status, llm: q.llm, attemptId: q.attemptId }, q.limit, (q.page - 1) * q.limit);
    return okPage(version, rows.map(processView), pagination(q.page, q.limit, total));
  });

  app.get('/processes/:id', { schema: { tags: ['processes'], params: IdParams, response: { 200: Envelope(Process), ...ErrorResponses } } }, async (request) =>
    ok(version, processView(await requireProcess(request.params.id))),
  );

  app.post('/processes/:id/cancel', { schema: { tags: ['processes'], params: IdParams, response: { 200: Envelope(CancelledProcess), ...ErrorResponses } } }, async (request) => {
    const p = await endProcess(svc, request.params.id, 'cancelled');
    return ok(version, { id: p.id, status: p.status, cancelledAt: (p.cancelled_at as Date).toISOString() });
  });

  app.post(
    '/execution-processes/:id/stop',
    { schema: { tags: ['processes'], params: IdParams, response: { 200: Envelope(StoppedProcess), ...ErrorResponses } } },
    async (request) => {
      const p = await endProcess(svc, request.params.id, 'stopped');
      return ok(version, { id: p.id, status: p.status, stoppedAt: (p.stopped_at as Date).toISOString(), duration: processDuration(p) });
    },
  );

  app.get(
    '/processes/:id/logs',
    { schema: { tags: ['processes'], params: IdParams, querystring: ProcessLogsQuery, response: { 200: NdjsonBody, ...ErrorResponses } } },
    async (request, reply) => {
      const p = await requireProcess(request.params.id);
      // a cursor past the last stored line starts at that line (lib/attempts/logCursor.ts), said in X-Log-Reset
      const cursor = await checkLogCursor(deps.db, p.id, request.query.after);
      if (cursor.reset) reply.header('x-log-reset', String(cursor.reset.seq));
      return sendNdjson(request, reply, async function* (signal) {
        for await (const rows of streamLogRows(deps.db, {
          processes: async () => [p.id],
          finished: async () => (await getProcess(deps.db, p.id))?.status !== 'running',
          follow: request.query.follow === true,
          feed: deps.logs,
          topics: [`process:${p.id}`],
          tail: request.query.tail,
          after: cursor.after !== undefined ? { [p.id]: cursor.after } : undefined,
          signal,
        }))
          yield rows.map(logLine);
      });
    },
  );

  app.get('/processes/:id/metrics', { schema: { tags: ['processes'], params: IdParams, response: { 200: Envelope(ProcessMetrics), ...ErrorResponses } } }, async (request) => {
    const p = await requireProcess(request.params.id);
    const samples = await metricSamples(deps.db, p.id);
    const avg = (f: (s: (typeof samples)[0]) => number) => (samples.length ? samples.reduce((a, s) => a + f(s), 0) / samples.length : 0);
    return ok(version, { processId: p.id, metrics: samples, averages: { cpu: avg((s) => s.cpu), memory: avg((s) => s.memory) } });
  });
};
