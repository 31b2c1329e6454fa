/**
 * `armada tools serve`: Armada's own services as MCP tools, through the same converter, over the OpenAPI documents
 * the running services serve. The tool list is curated by method + path; operations a service does not have (yet)
 * are skipped, so the list can name routes that arrive later. Tools are named by the document's operationId (the
 * curated name is the expected operationId and the fallback) and described by its summary + description.
 */
import { redactUrlCredentials } from '../urlCredentials';
import { loadOpenApiDocument, OpenApiDocumentError, openapiToTools, type ToolDefinition } from './openapiToTools';
import type { ServedTool } from './toolServer';

export interface CuratedOperation {
  /** The MCP tool name when the document gives the operation no operationId (normally equal to it). */
  tool: string;
  method: string;
  /** Path template; parameter names do not matter (`/api/tasks/{id}` matches `/api/tasks/{taskId}`). */
  path: string;
  /** Input properties left out (e.g. `follow`, which would turn a log read into an endless stream). */
  omit?: string[];
}

export const TASK_SERVICE_TOOLS: CuratedOperation[] = [
  { tool: 'listProjects', method: 'GET', path: '/api/projects' },
  { tool: 'listTasks', method: 'GET', path: '/api/tasks' },
  { tool: 'getTask', method: 'GET', path: '/api/tasks/{id}' },
  { tool: 'createTask', method: 'POST', path: '/api/tasks' },
  { tool: 'updateTask', method: 'PATCH', path: '/api/tasks/{id}' },
  { tool: 'startTask', method: 'POST', path: '/api/tasks/{id}/start' },
  { tool: 'cancelTask', method: 'POST', path: '/api/tasks/{id}/cancel' },
  { tool: 'listTaskAttempts', method: 'GET', path: '/api/tasks/{id}/attempts' },
  { tool: 'getTaskLogs', method: 'GET', path: '/api/tasks/{id}/logs', omit: ['follow'] },
  { tool: 'listAttempts', method: 'GET', path: '/api/attempts' },
  { tool: 'getAttempt', method: 'GET', path: '/api/attempts/{id}' },
  { tool: 'createAttempt', method: 'POST', path: '/api/attempts' },
  { tool: 'startTaskAttempt', method: 'POST', path: '/api/attempts/{id}/start' },
  { tool: 'cancelAttempt', method: 'POST', path: '/api/attempts/{id}/cancel' },
  { tool: 'getAttemptLogs', method: 'GET', path: '/api/attempts/{id}/logs', omit: ['follow'] },
  { tool: 'getAttemptDiff', method: 'GET', path: '/api/attempts/{id}/diff' },
  { tool: 'listPendingApprovals', method: 'GET', path: '/api/approvals/pending' },
  { tool: 'getApproval', method: 'GET', path: '/api/approvals/{id}' },
  { tool: 'respondToApproval', method: 'POST', path: '/api/approvals/{id}/respond' },
];

export const SCHEDULER_TOOLS: CuratedOperation[] = [
  { tool: 'listWorkflows', method: 'GET', path: '/api/v1/workflows' },
  { tool: 'runWorkflow', method: 'POST', path: '/api/v1/workflows/{name}/run' },
  { tool: 'listExecutions', method: 'GET', path: '/api/v1/executions' },
  { tool: 'getExecution', method: 'GET', path: '/api/v1/executions/{id}' },
  { tool: 'getExecutionLogs', method: 'GET', path: '/api/v1/executions/{id}/logs' },
];

const shape = (p: string) => p.replace(/\{[^}]+\}/g, '{}').replace(/\/+$/, '');

/** The curated subset of converted tools, renamed; curated operations the document lacks are simply absent. */
export function curate(tools: ToolDefinition[], list: CuratedOperation[]): ToolDefinition[] {
  const out: ToolDefinition[] = [];
  for (const c of list) {
    const t = tools.find((x) => x.method === c.method && shape(x.path) === shape(c.path));
    if (!t) continue;
    const omit = new Set(c.omit ?? []);
    const properties = Object.fromEntries(Object.entries((t.inputSchema.properties ?? {}) as Record<string, unknown>).filter(([k]) => !omit.has(k)));
    const required = ((t.inputSchema.required ?? []) as string[]).filter((k) => !omit.has(k));
    out.push({
      ...t,
      name: t.operationId && /^[a-z][a-zA-Z0-9]{2,39}$/.test(t.operationId) ? t.operationId : c.tool,
      description: `${t.description === `${t.method} ${t.path}` ? '' : `${t.description}\n\n`}${t.method} ${t.path} (Armada)`,
      inputSchema: { ...t.inputSchema, properties, ...(required.length ? { required } : { required: undefined }) },
      arguments: t.arguments.filter((a) => !omit.has(a.property)),
    });
  }
  return out;
}

export interface ArmadaServiceSource {
  service: 'task' | 'scheduler';
  baseUrl: string;
  /** Authentication headers for the service (bearer for the task service, X-API-Key for the scheduler). */
  headers: Record<string, string>;
  /** Set when no key was found for the service: where a key comes from, said if the service asks for one. */
  missingKeyAdvice?: string;
}

/** A configured service that cannot be used: unreachable, or it rejected the key. */
export class ServiceUnavailableError extends Error {}

/** Why a document fetch failed, in a few words: the key was rejected (or none was sent), or the service could not be reached. */
function reason(err: unknown, source: ArmadaServiceSource): string {
  if (!(err instanceof OpenApiDocumentError)) return `is unusable (${(err as Error).message})`;
  const status = err.status;
  if ((status === 401 || status === 403) && source.missingKeyAdvice) return `asked for an API key and none was found: ${source.missingKeyAdvice}`;
  if (status === 401 || status === 403) return `rejected the API key (HTTP ${status})`;
  if (status) return `answered HTTP ${status}`;
  if (err.unreachable) return `is unreachable (${err.unreachable})`;
  return `is unusable (${err.message})`;
}

/**
 * Fetches each service's document (which needs the service's key, so this checks reachability and the key) and
 * returns the curated tools. A service that fails throws ServiceUnavailableError naming it and why, unless
 * `allowPartial`, when it is reported through `warn` and its tools are left out.
 */
export async function armadaTools(sources: ArmadaServiceSource[], opts: { allowPartial?: boolean; warn: (msg: string) => void }): Promise<ServedTool[]> {
  const served: ServedTool[] = [];
  for (const s of sources) {
    const docPath = s.service === 'task' ? '/api/openapi.json' : '/api/v1/openapi.json';
    const base = s.baseUrl.replace(/\/+$/, '');
    let doc: Awaited<ReturnType<typeof loadOpenApiDocument>>;
    try {
      doc = await loadOpenApiDocument(`${base}${docPath}`, s.headers, 10_000);
    } catch (err) {
      // ARMADA_TASK_URL / ARMADA_SCHEDULER_URL may carry a password (which fetch refuses): not shown
      const msg = `the ${s.service} service at ${redactUrlCredentials(base)} ${reason(err, s)}`;
      if (!opts.allowPartial) throw new ServiceUnavailableError(msg);
      opts.warn(`armada tools serve: ${msg}; its tools are left out (--allow-partial)`);
      continue;
    }
    const tools = curate(openapiToTools(doc).tools, s.service === 'task' ? TASK_SERVICE_TOOLS : SCHEDULER_TOOLS);
    for (const tool of tools) served.push({ tool, target: { baseUrl: base, headers: s.headers } });
  }
  return served;
}
