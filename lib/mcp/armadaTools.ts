/**
 * `armada tools serve`: Armada's own services as MCP tools, through the same converter, over the OpenAPI documents
 * the running services serve. The tool list is curated by method + path; operations a service does not have (yet)
 * are skipped, so the list can name routes that arrive later.
 */
import { loadOpenApiDocument, openapiToTools, type ToolDefinition } from './openapiToTools';
import type { ServedTool } from './toolServer';

export interface CuratedOperation {
  /** The MCP tool name. */
  tool: string;
  method: string;
  /** Path template; parameter names do not matter (`/api/tasks/{id}` matches `/api/tasks/{taskId}`). */
  path: string;
  /** Input properties left out (e.g. `follow`, which would turn a log read into an endless stream). */
  omit?: string[];
}

export const TASK_SERVICE_TOOLS: CuratedOperation[] = [
  { tool: 'list_projects', method: 'GET', path: '/api/projects' },
  { tool: 'list_tasks', method: 'GET', path: '/api/tasks' },
  { tool: 'get_task', method: 'GET', path: '/api/tasks/{id}' },
  { tool: 'create_task', method: 'POST', path: '/api/tasks' },
  { tool: 'update_task', method: 'PATCH', path: '/api/tasks/{id}' },
  { tool: 'start_task', method: 'POST', path: '/api/tasks/{id}/start' },
  { tool: 'cancel_task', method: 'POST', path: '/api/tasks/{id}/cancel' },
  { tool: 'list_task_attempts', method: 'GET', path: '/api/tasks/{id}/attempts' },
  { tool: 'get_task_logs', method: 'GET', path: '/api/tasks/{id}/logs', omit: ['follow'] },
  { tool: 'list_attempts', method: 'GET', path: '/api/attempts' },
  { tool: 'get_attempt', method: 'GET', path: '/api/attempts/{id}' },
  { tool: 'create_attempt', method: 'POST', path: '/api/attempts' },
  { tool: 'start_attempt', method: 'POST', path: '/api/attempts/{id}/start' },
  { tool: 'cancel_attempt', method: 'POST', path: '/api/attempts/{id}/cancel' },
  { tool: 'get_attempt_logs', method: 'GET', path: '/api/attempts/{id}/logs', omit: ['follow'] },
  { tool: 'get_attempt_diff', method: 'GET', path: '/api/attempts/{id}/diff' },
  { tool: 'list_pending_approvals', method: 'GET', path: '/api/approvals/pending' },
  { tool: 'get_approval', method: 'GET', path: '/api/approvals/{id}' },
  { tool: 'respond_to_approval', method: 'POST', path: '/api/approvals/{id}/respond' },
];

export const SCHEDULER_TOOLS: CuratedOperation[] = [
  { tool: 'list_workflows', method: 'GET', path: '/api/v1/workflows' },
  { tool: 'run_workflow', method: 'POST', path: '/api/v1/workflows/{name}/run' },
  { tool: 'list_executions', method: 'GET', path: '/api/v1/executions' },
  { tool: 'get_execution', method: 'GET', path: '/api/v1/executions/{id}' },
  { tool: 'get_execution_logs', method: 'GET', path: '/api/v1/executions/{id}/logs' },
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
      name: c.tool,
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
}

/** Fetches each service's document and returns the curated tools; an unreachable service is reported and skipped. */
export async function armadaTools(sources: ArmadaServiceSource[], warn: (msg: string) => void): Promise<ServedTool[]> {
  const served: ServedTool[] = [];
  for (const s of sources) {
    const docPath = s.service === 'task' ? '/api/openapi.json' : '/api/v1/openapi.json';
    const base = s.baseUrl.replace(/\/+$/, '');
    try {
      const doc = await loadOpenApiDocument(`${base}${docPath}`, s.headers, 10_000);
      const tools = curate(openapiToTools(doc).tools, s.service === 'task' ? TASK_SERVICE_TOOLS : SCHEDULER_TOOLS);
      for (const tool of tools) served.push({ tool, target: { baseUrl: base, headers: s.headers } });
    } catch (err) {
      warn(`armada tools serve: the ${s.service} service at ${base} is not available (${(err as Error).message}); its tools are left out`);
    }
  }
  return served;
}
