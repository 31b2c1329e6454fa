/**
 * The external workflow platforms a source points at: how to check their health, read their version, list their
 * flows and run one. Plain HTTP with timeouts; the platform key travels in a header and is never logged.
 */
import type { SourceType } from '../db/schedulerSources';

export class PlatformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlatformError';
  }
}

interface PlatformSpec {
  healthPath: string;
  /** the `status` value a healthy platform answers */
  healthyStatus: string;
  versionPath: string;
  flowsPath: string;
  runPath(flow: string): string;
  runBody(input: unknown): unknown;
  /** id/name pairs out of the flow-list answer */
  flows(body: unknown): RemoteFlow[];
}

export interface RemoteFlow {
  id: string;
  name: string;
  description: string;
}

function asList(body: unknown): Record<string, unknown>[] {
  const list = Array.isArray(body)
    ? body
    : body && typeof body === 'object'
      ? ((body as Record<string, unknown>).flows ?? (body as Record<string, unknown>).agents ?? (body as Record<string, unknown>).items)
      : undefined;
  return Array.isArray(list) ? list.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object') : [];
}

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

const FLOW_BUILDER: PlatformSpec = {
  healthPath: '/health',
  healthyStatus: 'ok',
  versionPath: '/api/v1/version',
  flowsPath: '/api/v1/flows/',
  runPath: (flow) => `/api/v1/run/${encodeURIComponent(flow)}`,
  runBody: (input) => ({ input_value: typeof input === 'string' ? input : JSON.stringify(input ?? ''), input_type: 'chat', output_type: 'chat' }),
  flows: (body) => asList(body).map((f) => ({ id: str(f.id), name: str(f.name) || str(f.id), description: str(f.description) })),
};

export const PLATFORMS: Record<SourceType, PlatformSpec> = {
  'flow-builder': FLOW_BUILDER,
  langflow: FLOW_BUILDER,
  'automagik-hive': {
    healthPath: '/api/v1/health',
    healthyStatus: 'success',
    versionPath: '/api/v1/version',
    flowsPath: '/agents',
    runPath: (agent) => `/agents/${encodeURIComponent(agent)}/runs`,
    runBody: (input) => ({ message: typeof input === 'string' ? input : JSON.stringify(input ?? '') }),
    flows: (body) => asList(body).map((a) => ({ id: str(a.agent_id ?? a.id), name: str(a.name) || str(a.agent_id ?? a.id), description: str(a.description) })),
  },
  'automagik-agents': {
    healthPath: '/health',
    healthyStatus: 'healthy',
    versionPath: '/api/v1/version',
    flowsPath: '/api/v1/agent/list',
    runPath: (agent) => `/api/v1/agent/${encodeURIComponent(agent)}/run`,
    runBody: (input) => ({ message_content: typeof input === 'string' ? input : JSON.stringify(input ?? '') }),
    flows: (body) => asList(body).map((a) => ({ id: str(a.id ?? a.name), name: str(a.name) || str(a.id), description: str(a.description) })),
  },
};

export interface PlatformTarget {
  sourceType: SourceType;
  url: string;
  apiKey: string | null;
}

/** Trailing slashes removed, so `http://x/` and `http://x` are the same source. */
export function normaliseSourceUrl(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

async function call(
  t: PlatformTarget,
  method: 'GET' | 'POST',
  path: string,
  opts: { timeoutMs: number; body?: unknown; signal?: AbortSignal },
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (t.apiKey) headers['x-api-key'] = t.apiKey;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const signals = [AbortSignal.timeout(opts.timeoutMs), ...(opts.signal ? [opts.signal] : [])];
  let res: Response;
  try {
    res = await fetch(`${normaliseSourceUrl(t.url)}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.any(signals),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string; errors?: { code?: string }[] } };
    if (e.name === 'TimeoutError') throw new PlatformError(`${method} ${path} timed out after ${opts.timeoutMs} ms`);
    if (e.name === 'AbortError') throw new PlatformError(`${method} ${path} was cancelled`);
    throw new PlatformError(`${method} ${path} failed: ${e.cause?.code ?? e.cause?.errors?.[0]?.code ?? e.cause?.message ?? e.message}`);
  }
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body };
}

/** Throws PlatformError unless the platform's health endpoint answers 2xx with the healthy status of its type. */
export async function checkHealth(t: PlatformTarget, timeoutMs = 5000): Promise<void> {
  const spec = PLATFORMS[t.sourceType];
  const r = await call(t, 'GET', spec.healthPath, { timeoutMs });
  if (r.status < 200 || r.status >= 300) throw new PlatformError(`health check answered HTTP ${r.status}`);
  const status = r.body && typeof r.body === 'object' ? (r.body as Record<string, unknown>).status : undefined;
  if (status !== spec.healthyStatus) throw new PlatformError(`health check answered status ${JSON.stringify(status ?? null)}, expected "${spec.healthyStatus}"`);
}

/** The platform's version information (an object), or null when it has no version endpoint (404). */
export async function readVersion(t: PlatformTarget, timeoutMs = 5000): Promise<Record<string, unknown> | null> {
  const r = await call(t, 'GET', PLATFORMS[t.sourceType].versionPath, { timeoutMs });
  if (r.status === 404) return null;
  if (r.status < 200 || r.status >= 300) throw new PlatformError(`version endpoint answered HTTP ${r.status}`);
  if (r.body && typeof r.body === 'object' && !Array.isArray(r.body)) return r.body as Record<string, unknown>;
  return { version: String(r.body) };
}

/** Health check, then version: what source creation (and a URL change) validates. */
export async function validatePlatform(t: PlatformTarget, timeoutMs = 5000): Promise<Record<string, unknown> | null> {
  await checkHealth(t, timeoutMs);
  return readVersion(t, timeoutMs);
}

export async function listRemoteFlows(t: PlatformTarget, timeoutMs = 10_000): Promise<RemoteFlow[]> {
  const spec = PLATFORMS[t.sourceType];
  const r = await call(t, 'GET', spec.flowsPath, { timeoutMs });
  if (r.status < 200 || r.status >= 300) throw new PlatformError(`flow list answered HTTP ${r.status}`);
  return spec.flows(r.body);
}

export interface FlowRunResult {
  status: number;
  body: unknown;
}

/** Runs a flow; a non-2xx answer throws (with the answer's status). */
export async function runRemoteFlow(t: PlatformTarget, flow: string, input: unknown, timeoutMs: number, signal?: AbortSignal): Promise<FlowRunResult> {
  const spec = PLATFORMS[t.sourceType];
  const r = await call(t, 'POST', spec.runPath(flow), { timeoutMs, body: spec.runBody(input), signal });
  if (r.status < 200 || r.status >= 300) {
    const err = new PlatformError(`flow ${flow} answered HTTP ${r.status}`) as PlatformError & { httpStatus?: number };
    err.httpStatus = r.status;
    throw err;
  }
  return r;
}
