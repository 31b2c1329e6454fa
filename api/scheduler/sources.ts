/**
 * Source routes: /api/v1/sources… A source is an external workflow platform. Creation (and a change of url, type or
 * key) validates the platform: its health check, its version, its flow list (on a PATCH, checked against the flows
 * the source's workflows run: a 409 unless `?force=true`). A url is stored and compared in canonical form
 * (canonicalSourceUrl). The platform key is stored sealed and never returned or logged. An id that is not a UUID
 * cannot name a source: 404 "Source not found", like any unknown id.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { conflict, invalidRequest, notFound } from '../../lib/errors';
import { isUuid, newId } from '../../lib/ids';
import { withTransaction, type Queryable } from '../../lib/db/pool';
import { UNIQUE_VIOLATION } from '../../lib/db/projects';
import {
  deleteSourceCascade,
  findSourceByCanonicalUrl,
  flowTasksOfSource,
  getSource,
  insertSource,
  listSources,
  lockSourceForChange,
  recordSourceHealth,
  updateSource,
  type SourceFlowTask,
  type SourcePatch,
  type SourceRow,
} from '../../lib/db/schedulerSources';
import { schedulerMetrics } from '../../lib/scheduler/metrics';
import {
  PlatformError,
  canonicalSourceUrl,
  checkHealth,
  listRemoteFlows,
  normaliseSourceUrl,
  validatePlatform,
  type PlatformTarget,
  type RemoteFlow,
} from '../../lib/scheduler/platforms';
import { sourceTarget } from '../../lib/scheduler/sourceTarget';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { deleteSchedule } from '../../lib/scheduler/temporalSchedules';
import { sealSecret } from '../../lib/secretBox';
import { redactUrlCredentials } from '../../lib/urlCredentials';
import type { SchedulerPluginOptions } from './deps';
import { resyncScheduleLater } from './scheduleResync';
import { platformFailure } from './platformFailure';
import { stopRuns } from './stopRuns';
import { withinDeadline } from './temporalAccess';
import {
  CreateSourceBody,
  DeletedSource,
  DetailErrors,
  PatchSourceBody,
  PatchSourceQuery,
  PlatformErrors,
  RemoteFlows,
  Detail,
  Source,
  SourceHealth,
  SourceIdParams,
  SourceList,
  SourceListQuery,
} from './schemas';

export const SOURCE_NOT_FOUND = 'Source not found';
export const SOURCE_VALIDATION_FAILED = 'Failed to validate source';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function sourceView(s: SourceRow) {
  return {
    id: s.id,
    name: s.name,
    source_type: s.source_type,
    url: s.url,
    status: s.status,
    has_api_key: s.api_key_sealed !== null,
    version_info: s.version_info,
    last_health_check: iso(s.last_health_at),
    last_health_error: s.last_health_error,
    created_at: s.created_at.toISOString(),
    updated_at: s.updated_at.toISOString(),
  };
}

const duplicateUrl = (url: string) => invalidRequest(`Source with URL ${url} already exists`);

/**
 * The url a request gives, in the canonical form it is stored and compared in (canonicalSourceUrl). The schema's
 * pattern takes a few the WHATWG parser cannot read (`http://host:99999`): a 400 naming url, as the schema's own;
 * they went on to validation, which failed with fetch's "Invalid URL".
 */
function canonicalUrl(url: string): string {
  const canonical = canonicalSourceUrl(url);
  if (canonical === undefined) throw invalidRequest('Request body is invalid: url must be a URL whose host and port can be read (such as https://langflow.example.com; a port is at most 65535)');
  return canonical;
}

/** A stored url in canonical form, for comparison; one stored before that the parser cannot read, as stored. */
const storedCanonical = (url: string): string => canonicalSourceUrl(url) ?? normaliseSourceUrl(url);

/** How many of the flow tasks a platform lacks a 409 names, at most (then how many more). */
const MAX_NAMED_TASKS = 10;

/**
 * The flow tasks on a source whose flow the platform does not list. A task runs the flow's id (resolved at its
 * workflow's creation; older rows: as written), which LangFlow's run also takes as an endpoint name.
 */
function tasksLacking(tasks: SourceFlowTask[], flows: RemoteFlow[]): SourceFlowTask[] {
  const listed = new Set(flows.flatMap((f) => (f.endpoint_name ? [f.id, f.endpoint_name] : [f.id])));
  return tasks.filter((t) => !listed.has(t.flow));
}

function lackingFlows(source: SourceRow, platform: PlatformTarget, lacking: SourceFlowTask[]) {
  const named = lacking
    .slice(0, MAX_NAMED_TASKS)
    .map((t) => `workflow ${t.workflow} task "${t.task}" runs flow ${t.flow}${t.flow_name && t.flow_name !== t.flow ? ` ("${t.flow_name}")` : ''}`);
  const more = lacking.length > MAX_NAMED_TASKS ? `; and ${lacking.length - MAX_NAMED_TASKS} more flow tasks` : '';
  return conflict(
    `Source "${source.name}": the ${platform.sourceType} platform at ${platform.url} lacks flows its workflows run (their runs would fail there): ${named.join('; ')}${more}. Nothing was changed: create those flows there first, or send the change again with ?force=true to make it anyway`,
  );
}

/** The longest reason a failed validation answers with (a platform's answer in it is already cut at 500). */
const MAX_CAUSE_CHARS = 600;

/**
 * Why a platform failed its validation, for the client: one line, at most MAX_CAUSE_CHARS, without the key (a
 * platform may echo it) or URL credentials. No stack: PlatformError messages name the call and the failure only.
 */
function validationCause(err: PlatformError, t: PlatformTarget): string {
  let cause = redactUrlCredentials(err.message.replace(/\s+/g, ' ').trim());
  // a key of a few characters would take letters out of the words around it (and is no secret worth hiding)
  if (t.apiKey && t.apiKey.length >= 6) cause = cause.split(t.apiKey).join('[key]');
  return cause.length > MAX_CAUSE_CHARS ? `${cause.slice(0, MAX_CAUSE_CHARS)}…` : cause;
}

export const sourceRoutes: FastifyPluginAsync<SchedulerPluginOptions> = async (fastify, { deps }) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const settings = schedulerSettings(deps.config);
  const metrics = schedulerMetrics(deps.metrics);
  const target = (s: SourceRow): PlatformTarget => sourceTarget(s, deps.keys.encryption);
  const mustGet = async (id: string): Promise<SourceRow> => {
    const s = isUuid(id) ? await getSource(deps.db, id) : undefined;
    if (!s) throw notFound(SOURCE_NOT_FOUND);
    return s;
  };
  /**
   * Validates the platform; the reason goes to the log (never the key). The client gets the documented detail and
   * the reason, shortened (the call and what went wrong, e.g. `GET /health failed: ECONNREFUSED`, or the platform's
   * own words when it refused the key): without it only the server's log said why.
   */
  const validate = async (t: PlatformTarget): Promise<{ versionInfo: Record<string, unknown> | null; flows: RemoteFlow[] }> => {
    try {
      return await validatePlatform(t, settings.sourceTimeoutMs);
    } catch (err) {
      if (!(err instanceof PlatformError)) throw err;
      fastify.log.info({ url: t.url, sourceType: t.sourceType, reason: err.message }, 'source validation failed');
      throw invalidRequest(`${SOURCE_VALIDATION_FAILED}: ${validationCause(err, t)}`);
    }
  };

  app.get(
    '/sources',
    { schema: { tags: ['sources'], querystring: SourceListQuery, response: { 200: SourceList, ...DetailErrors } } },
    async (request) => {
      const { status, limit, offset } = request.query;
      const { rows, total } = await listSources(deps.db, { status }, limit, offset);
      return { items: rows.map(sourceView), total, limit, offset, has_more: offset + rows.length < total };
    },
  );

  app.post(
    '/sources',
    { schema: { tags: ['sources'], body: CreateSourceBody, response: { 201: Source, ...DetailErrors } } },
    async (request, reply) => {
      const body = request.body;
      const url = canonicalUrl(body.url);
      if (await findSourceByCanonicalUrl(deps.db, url, storedCanonical)) throw duplicateUrl(url);
      const apiKey = body.api_key ? body.api_key : null;
      const { versionInfo } = await validate({ sourceType: body.source_type, url, apiKey });
      const id = newId();
      try {
        const row = await insertSource(deps.db, {
          id,
          name: body.name ?? `${body.source_type}-${id.slice(0, 8)}`,
          sourceType: body.source_type,
          url,
          apiKeySealed: apiKey ? sealSecret(deps.keys.encryption, apiKey) : null,
          versionInfo,
        });
        metrics.sourceHealthy.set({ source: row.name, source_type: row.source_type }, 1);
        return reply.code(201).send(sourceView(row));
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw duplicateUrl(url);
        throw err;
      }
    },
  );

  app.get(
    '/sources/:id',
    { schema: { tags: ['sources'], params: SourceIdParams, response: { 200: Source, ...DetailErrors } } },
    async (request) => sourceView(await mustGet(request.params.id)),
  );

  app.patch(
    '/sources/:id',
    { schema: { tags: ['sources'], params: SourceIdParams, querystring: PatchSourceQuery, body: PatchSourceBody, response: { 200: Source, ...DetailErrors, 409: Detail } } },
    async (request) => {
      const current = await mustGet(request.params.id);
      const body = request.body;
      const patch: SourcePatch = { name: body.name, sourceType: body.source_type, status: body.status };
      const url = body.url === undefined ? current.url : canonicalUrl(body.url);
      if (url !== current.url) {
        const other = await findSourceByCanonicalUrl(deps.db, url, storedCanonical);
        if (other && other.id !== current.id) throw duplicateUrl(url);
        patch.url = url;
      }
      let checkFlows: { platform: PlatformTarget; flows: RemoteFlow[] } | undefined;
      const apiKey = body.api_key === undefined ? target(current).apiKey : body.api_key || null;
      if (body.api_key !== undefined) patch.apiKeySealed = apiKey ? sealSecret(deps.keys.encryption, apiKey) : null;
      // What the platform is (type, address, key) changed: check that it still answers before saving.
      if (patch.url !== undefined || (body.source_type !== undefined && body.source_type !== current.source_type) || body.api_key !== undefined) {
        const platform: PlatformTarget = { sourceType: body.source_type ?? current.source_type, url, apiKey };
        const { versionInfo, flows } = await validate(platform);
        patch.versionInfo = versionInfo;
        patch.validated = true;
        // the platform it now names must have every flow its workflows run (runs there answer 404 otherwise),
        // unless the client says the change is meant (a migration whose flows come after)
        if (!request.query.force) checkFlows = { platform, flows };
      }
      // The flow check and the change in one transaction, the source's row locked first (FOR UPDATE): a workflow being
      // created on the source holds its key-share lock until it commits (lockSources), so it is either in the flow tasks
      // read here or, coming after, finds the platform changed and is refused (a 409; docs/scheduler.md#moving-a-source).
      const save = async (db: Queryable): Promise<SourceRow | undefined> => {
        if (checkFlows) {
          if (!(await lockSourceForChange(db, current.id))) return undefined;
          const lacking = tasksLacking(await flowTasksOfSource(db, current.id), checkFlows.flows);
          if (lacking.length) throw lackingFlows(current, checkFlows.platform, lacking);
        }
        return updateSource(db, current.id, patch);
      };
      try {
        const row = checkFlows ? await withTransaction(deps.db, save) : await save(deps.db);
        if (!row) throw notFound(SOURCE_NOT_FOUND);
        if (patch.validated) metrics.sourceHealthy.set({ source: row.name, source_type: row.source_type }, 1);
        return sourceView(row);
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw duplicateUrl(url);
        throw err;
      }
    },
  );

  app.delete(
    '/sources/:id',
    { schema: { tags: ['sources'], params: SourceIdParams, response: { 200: DeletedSource, ...DetailErrors } } },
    async (request) => {
      const source = await mustGet(request.params.id);
      // a failed delete is the server's (503 while PostgreSQL is unavailable, else 500), never the client's 400
      const result = await withTransaction(deps.db, (c) => deleteSourceCascade(c, source.id));
      if (!result.deleted) throw notFound(SOURCE_NOT_FOUND);
      // The rows are gone (one transaction); their Temporal schedules follow. A schedule left behind by a Temporal
      // outage finds no workflow row when it fires and ends at once.
      if (result.temporalIds.length) {
        try {
          const client = await deps.temporal.client();
          await withinDeadline(client, 'Deleting the schedules of a deleted source', () => Promise.all(result.temporalIds.map((id) => deleteSchedule(client, id))));
        } catch (err) {
          request.log.warn({ err: { message: (err as Error).message }, workflows: result.workflows }, 'could not delete the schedules of a deleted source; deleting them once Temporal answers');
          for (const id of result.temporalIds) resyncScheduleLater(deps, id, request.log); // their rows are gone
        }
      }
      // their running executions stop as with DELETE /workflows/{name}; one left running writes nothing
      if (result.runningRuns.length) {
        try {
          await stopRuns(await deps.temporal.client(), deps.db, result.runningRuns, request.log);
        } catch (err) {
          request.log.warn({ err: { message: (err as Error).message }, workflows: result.workflows }, 'could not stop the runs of a deleted source');
        }
      }
      metrics.sourceHealthy.remove({ source: source.name, source_type: source.source_type });
      return { id: source.id, deleted: true, deleted_workflows: result.workflows };
    },
  );

  app.get(
    '/sources/:id/flows',
    { schema: { tags: ['sources'], params: SourceIdParams, response: { 200: RemoteFlows, ...DetailErrors, ...PlatformErrors } } },
    async (request) => {
      const source = await mustGet(request.params.id);
      try {
        return { source_id: source.id, flows: await listRemoteFlows(target(source), settings.sourceTimeoutMs) };
      } catch (err) {
        if (!(err instanceof PlatformError)) throw err;
        // the platform's failure (down, an error, a redirect elsewhere, a timeout), not the request's (it was a 400)
        throw platformFailure(err, 'Failed to list flows');
      }
    },
  );

  app.post(
    '/sources/:id/health',
    { schema: { tags: ['sources'], params: SourceIdParams, response: { 200: SourceHealth, ...DetailErrors } } },
    async (request) => {
      const source = await mustGet(request.params.id);
      let error: string | null = null;
      try {
        await checkHealth(target(source), settings.sourceTimeoutMs);
      } catch (err) {
        if (!(err instanceof PlatformError)) throw err;
        error = err.message;
      }
      const recorded = await recordSourceHealth(deps.db, source.id, error === null, error, source);
      // not recorded: the source was changed (another url, type or key) while it was checked, and its status is the
      // row's as it is now (the result is of the platform it was); or it was deleted meanwhile (a 404, as after it)
      if (recorded) metrics.sourceHealthy.set({ source: recorded.name, source_type: recorded.source_type }, error === null ? 1 : 0);
      const row = recorded ?? (await getSource(deps.db, source.id));
      if (!row) throw notFound(SOURCE_NOT_FOUND);
      return { id: row.id, healthy: error === null, status: row.status, error, checked_at: (row.last_health_at ?? new Date()).toISOString() };
    },
  );
};

