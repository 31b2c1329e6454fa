/**
 * The one HTTP client of the board. Every request goes to the task service's origin:
 *  - task service: `/api/...`, envelope `{success, data, pagination?}` / `{success:false, error:{code,message,details}}`;
 *  - scheduler, agents, traces: `/svc/<service>/...`, proxied by the task service (api/task/serviceProxy.ts), which
 *    adds their X-API-Key; their errors are `{detail}`.
 * The stored key goes out as `Authorization: Bearer <key>`. A failure throws an ApiError carrying the server's
 * message; a 401 of the task service also opens the key prompt (a proxied service's own 401 does not: SERVICE_KEY_REFUSED).
 */
import { getApiKey, reportUnauthorized } from './auth';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly details?: Record<string, unknown>,
    /** the service that answered (through the task service's proxy for the others) */
    readonly service: Service = 'task',
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  pages: number;
  hasNext: boolean;
  hasPrev: boolean;
}

export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

export type Service = 'task' | 'scheduler' | 'agents' | 'traces';

/**
 * The code of a proxied service's own 401 (`{detail: "Invalid API key"}`): it refused the X-API-Key the task service
 * sends it (a key set differently on the two hosts), not the key of this tab, which the task service accepted. The
 * key prompt would ask for the wrong key: the error says which setting to fix instead (api/errorNote.ts).
 */
export const SERVICE_KEY_REFUSED = 'SERVICE_KEY_REFUSED';

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined | null>;
  signal?: AbortSignal;
}

/** The path prefix of each service on the task service's origin. */
export const SERVICE_PREFIX: Record<Service, string> = {
  task: '/api',
  scheduler: '/svc/scheduler/api/v1',
  agents: '/svc/agents/api/v1',
  traces: '/svc/traces/api/v1',
};

export function buildUrl(service: Service, path: string, query?: RequestOptions['query']): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return `${SERVICE_PREFIX[service]}${path}${s ? `?${s}` : ''}`;
}

function headersFor(body: unknown): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  const key = getApiKey();
  if (key) h.authorization = `Bearer ${key}`;
  if (body !== undefined) h['content-type'] = 'application/json';
  return h;
}

/** The message of an error body in either shape, or a fallback naming the status; `service` is who answered. */
export function errorFromBody(status: number, body: unknown, service: Service = 'task'): ApiError {
  const b = body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } | string; message?: string; detail?: unknown } | null;
  // the code-hosting routes answer {success:false, error:"<code>", message} (docs/codehost.md)
  if (typeof b?.error === 'string') return new ApiError(b.message ?? b.error, status, b.error, undefined, service);
  if (b?.error?.message) return new ApiError(b.error.message, status, b.error.code ?? String(status), b.error.details, service);
  if (b?.detail !== undefined) {
    const detail = typeof b.detail === 'string' ? b.detail : JSON.stringify(b.detail);
    return new ApiError(detail, status, String(status), undefined, service);
  }
  return new ApiError(`Request failed with HTTP ${status}`, status, String(status), undefined, service);
}

async function send(service: Service, path: string, opts: RequestOptions): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(buildUrl(service, path, opts.query), {
      method: opts.method ?? 'GET',
      headers: headersFor(opts.body),
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError('Cannot reach the Armada server', 0, 'NETWORK_ERROR', undefined, service);
  }
  const text = await res.text();
  let body: unknown = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (!res.ok) {
    const err = errorFromBody(res.status, body, service);
    if (res.status === 401) {
      const e = (body as { error?: unknown } | null)?.error;
      // through /svc/…, the task service's refusal of this tab's key has its envelope; the proxied service's own
      // ({detail}) refused the key the task service sends it, which no key typed here changes
      if (service !== 'task' && !(e && typeof e === 'object')) throw new ApiError(err.message, 401, SERVICE_KEY_REFUSED, undefined, service);
      // a code-hosting 401 (codehost_auth_required, `error` a string) asks for a code-host sign-in, not for the Armada key
      if (typeof e !== 'string') reportUnauthorized();
    }
    throw err;
  }
  return body;
}

/** A task service call: resolves with the envelope's `data`. */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const body = (await send('task', path, opts)) as { success?: boolean; data?: T } | null;
  if (body && typeof body === 'object' && body.success === false) throw errorFromBody(200, body);
  return (body?.data ?? (body as T)) as T;
}

/** A task service list call: resolves with `data` and `pagination`. */
export async function apiPage<T>(path: string, opts: RequestOptions = {}): Promise<Page<T>> {
  const body = (await send('task', path, opts)) as { data: T[]; pagination: Pagination };
  return { data: body.data, pagination: body.pagination };
}

/** A scheduler / agents / traces call (through the task service's proxy): resolves with the JSON body as is. */
export async function svc<T>(service: Exclude<Service, 'task'>, path: string, opts: RequestOptions = {}): Promise<T> {
  return (await send(service, path, opts)) as T;
}
