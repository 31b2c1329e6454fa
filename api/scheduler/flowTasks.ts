/**
 * Flow tasks at workflow creation: the source (id or name) and the flow (id, endpoint_name or display name) are
 * resolved once, against the platform's own flow list, and the task stores the flow's id, so a run never guesses
 * and a renamed flow keeps running. A name that matches no flow (or source) is a 400, one that matches several a 409;
 * a platform that cannot list its flows a 502 (a 504 when it timed out).
 */
import { conflict, invalidRequest } from '../../lib/errors';
import { isUuid } from '../../lib/ids';
import type { Queryable } from '../../lib/db/pool';
import { getSource, getSourcesByName, type SourceRow } from '../../lib/db/schedulerSources';
import type { FlowTask } from '../../lib/db/schedulerWorkflows';
import { PlatformError, listRemoteFlows, matchFlow, type RemoteFlow } from '../../lib/scheduler/platforms';
import { sourceTarget } from '../../lib/scheduler/sourceTarget';
import { platformFailure } from './platformFailure';

export interface FlowTaskRequest {
  name: string;
  source: string;
  flow: string;
  input?: unknown;
  timeout?: number;
}

/**
 * Flow lists by source id, so a workflow with several tasks on one source asks the platform once, with the source's
 * row as it was read then (the workflow's transaction checks that its platform is still that one).
 */
export type FlowListCache = Map<string, { source: SourceRow; flows: Promise<RemoteFlow[]> }>;

/**
 * The source a flow task names: by id, else by name. Names are not unique, so a name several sources have is a 409
 * naming their ids, like a display name several flows share: binding to one of them would be a guess.
 */
async function resolveSource(db: Queryable, t: FlowTaskRequest): Promise<SourceRow> {
  const byId = isUuid(t.source) ? await getSource(db, t.source) : undefined;
  if (byId) return byId;
  const named = await getSourcesByName(db, t.source);
  if (named.length > 1) throw conflict(`Task "${t.name}": source "${t.source}" names ${named.length} sources: ${named.map((s) => s.id).join(', ')}; give the source's id`);
  const [source] = named;
  if (!source) throw invalidRequest(`Task "${t.name}" names an unknown source "${t.source}"`);
  return source;
}

export async function resolveFlowTask(db: Queryable, encryptionKey: Buffer, timeoutMs: number, t: FlowTaskRequest, cache: FlowListCache = new Map()): Promise<FlowTask> {
  const found = await resolveSource(db, t);
  let listed = cache.get(found.id);
  if (!listed) {
    listed = { source: found, flows: listRemoteFlows(sourceTarget(found, encryptionKey), timeoutMs) };
    listed.flows.catch(() => undefined); // awaited below; a later task on the same source gets the same failure
    cache.set(found.id, listed);
  }
  const { source } = listed; // as its flows were listed
  let flows: RemoteFlow[];
  try {
    flows = await listed.flows;
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    // the platform's failure, not the request's: a 502, a 504 for a timeout (it was a 400)
    throw platformFailure(err, `Task "${t.name}": could not list the flows of source "${source.name}" to find "${t.flow}"`);
  }
  const match = matchFlow(flows, t.flow);
  if ('error' in match) {
    if (match.error === 'several') {
      const ids = match.candidates.map((f) => `${f.id}${f.endpoint_name ? ` (${f.endpoint_name})` : ''}`).join(', ');
      throw conflict(`Task "${t.name}": "${t.flow}" names ${match.candidates.length} flows on source "${source.name}": ${ids}; give the id or endpoint_name`);
    }
    throw invalidRequest(`Task "${t.name}": source "${source.name}" has no flow "${t.flow}" (give a flow's id, endpoint_name or name; GET /api/v1/sources/${source.id}/flows lists them)`);
  }
  return {
    name: t.name,
    type: 'flow',
    source: source.id,
    flow: match.flow.id,
    flowName: match.flow.name,
    ...(t.input !== undefined ? { input: t.input } : {}),
    ...(t.timeout ? { timeout: t.timeout } : {}),
  };
}
