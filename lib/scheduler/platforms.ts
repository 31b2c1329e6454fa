/**
 * The external workflow platforms a source points at: how to check their health, read their version, list their
 * flows and run one. Plain HTTP with timeouts; the platform key travels in a header and is never logged.
 */
import { fetchFailure } from '../http/fetchFailure';
import { formatBytes, readBoundedText } from '../http/readBounded';
import { fetchFollowingRedirects, RedirectElsewhere, RedirectError } from '../http/redirects';
import type { SourceType } from '../db/schedulerSources';
import { storableText } from '../db/storableText';
import { parseUntrustedJson, plainObject } from '../untrustedJson';
import { redactSecrets } from '../secretText';

/** A platform call that failed; `httpStatus` is set when the platform answered (with `body`, its answer's text). */
export class PlatformError extends Error {
  constructor(
    message: string,
    readonly httpStatus?: number,
    readonly body?: string,
  ) {
    super(message);
    this.name = 'PlatformError';
  }
}

/** The platform took the request but did not answer in time: it may be running it, so a run is not sent again. */
export class PlatformTimeout extends PlatformError {}

/**
 * The platform could not be reached: the connection failed before any answer came. The one failure after which a run
 * may be sent again; whatever fails once an answer began to arrive (reading it, an odd answer) is not this.
 */
export class PlatformUnreachable extends PlatformError {}

/** A request body and its content type (LangFlow and automagik-agents take JSON, AgentOS form fields). */
interface EncodedBody {
  contentType: string;
  text: string;
}

interface PlatformSpec {
  healthPath: string;
  /** the `status` value a healthy platform answers */
  healthyStatus: string;
  /** asked only when healthPath answers 404: the health route of a newer generation of the platform */
  healthFallback?: { path: string; status: string };
  versionPath: string;
  /** the runnable flows (LangFlow: the user's flows without graphs, no starter examples); it needs the key */
  flowsPath: string;
  runPath(flow: string): string;
  runBody(input: string): EncodedBody;
  /** the runnable flows out of the flow-list answer */
  flows(body: unknown): RemoteFlow[];
  /** headers carrying the platform key */
  keyHeaders(key: string): Record<string, string>;
}

/** A flow (LangFlow) or agent (automagik) a flow task can run: `id`, `endpoint_name` or `name` name it. */
export interface RemoteFlow {
  id: string;
  name: string;
  /** LangFlow's endpoint name (`/run/{endpoint_name}`), null when the flow has none or the platform has no such thing */
  endpoint_name: string | null;
  description: string;
  /** last change per the platform, null when it does not say */
  updated_at: string | null;
}

function asList(body: unknown): Record<string, unknown>[] {
  const list = Array.isArray(body)
    ? body
    : body && typeof body === 'object'
      ? ((body as Record<string, unknown>).flows ?? (body as Record<string, unknown>).agents ?? (body as Record<string, unknown>).items)
      : undefined;
  return Array.isArray(list) ? list.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object') : [];
}

/** A field of a listed flow: text as the platform wrote it, NUL and unpaired surrogates as U+FFFD (storableText). */
const str = (v: unknown): string => (typeof v === 'string' ? storableText(v) : typeof v === 'number' ? String(v) : '');
const strOrNull = (v: unknown): string | null => str(v) || null;
const json = (input: Record<string, unknown>): EncodedBody => ({ contentType: 'application/json', text: JSON.stringify(input) });
const xKey = (key: string) => ({ 'x-api-key': key });

const FLOW_BUILDER: PlatformSpec = {
  healthPath: '/health',
  healthyStatus: 'ok',
  versionPath: '/api/v1/version',
  // LangFlow's read_flows: without these it answers every flow with its whole graph plus the starter examples,
  // which cannot be run (megabytes); with them, the caller's own flows as headers (id, name, endpoint_name, …).
  flowsPath: '/api/v1/flows/?remove_example_flows=true&header_flows=true&get_all=true',
  runPath: (flow) => `/api/v1/run/${encodeURIComponent(flow)}?stream=false`,
  runBody: (input) => json({ input_value: input, input_type: 'chat', output_type: 'chat' }),
  flows: (body) =>
    asList(body)
      .filter((f) => f.is_component !== true) // saved components are listed too but cannot be run
      .map((f) => ({
        id: str(f.id),
        name: str(f.name) || str(f.id),
        endpoint_name: strOrNull(f.endpoint_name),
        description: str(f.description),
        updated_at: strOrNull(f.updated_at),
      })),
  keyHeaders: xKey,
};

export const PLATFORMS: Record<SourceType, PlatformSpec> = {
  'flow-builder': FLOW_BUILDER,
  langflow: FLOW_BUILDER,
  // automagik-hive on PyPI (1.0.0rc7) is an Agno AgentOS app: GET /agents, POST /agents/{id}/runs with form fields
  // (`stream` defaults to true there, so false is sent), key as a bearer token (OS_SECURITY_KEY). Health is the
  // spec's /api/v1/health (status success, the 0.x Hive); AgentOS has only /health (status ok), asked when the
  // first answers 404. docs/scheduler.md#what-was-checked-against-the-real-packages
  'automagik-hive': {
    healthPath: '/api/v1/health',
    healthyStatus: 'success',
    healthFallback: { path: '/health', status: 'ok' },
    versionPath: '/api/v1/version',
    flowsPath: '/agents',
    runPath: (agent) => `/agents/${encodeURIComponent(agent)}/runs`,
    runBody: (input) => ({ contentType: 'application/x-www-form-urlencoded', text: new URLSearchParams({ message: input, stream: 'false' }).toString() }),
    flows: (body) =>
      asList(body).map((a) => {
        const id = str(a.id ?? a.agent_id);
        return { id, name: str(a.name) || id, endpoint_name: null, description: str(a.description), updated_at: null };
      }),
    keyHeaders: (key) => ({ 'x-api-key': key, authorization: `Bearer ${key}` }),
  },
  // automagik-agents as automagik-spark 0.3.7 (PyPI) drives it: GET /api/v1/agents (the name is the id), version
  // info from GET /, POST /api/v1/agent/{name}/run {message_content}.
  'automagik-agents': {
    healthPath: '/health',
    healthyStatus: 'healthy',
    versionPath: '/',
    flowsPath: '/api/v1/agents',
    runPath: (agent) => `/api/v1/agent/${encodeURIComponent(agent)}/run`,
    runBody: (input) => json({ message_content: input, session_origin: 'armada' }),
    flows: (body) =>
      asList(body).map((a) => {
        const id = str(a.name ?? a.id);
        return { id, name: id, endpoint_name: null, description: str(a.description), updated_at: null };
      }),
    keyHeaders: xKey,
  },
};

export interface PlatformTarget {
  sourceType: SourceType;
  url: string;
  apiKey: string | null;
}

/** Trailing slashes removed, so `http://x/` and `http://x` are the same source (the base every call's path is put after). */
export function normaliseSourceUrl(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

/** RFC 3986's unreserved characters (2.3): an escape of one of them is the same URL as the character itself (6.2.2.2). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * The percent-escapes of `href` in RFC 3986's normal form (6.2.2.1, 6.2.2.2): an escape of an unreserved character
 * decoded (`%7E` → `~`, `%41` → `A`), every other one in upper-case hex (`%2f` → `%2F`). A `%` not followed by two hex
 * digits is left as it is (the WHATWG parser keeps it so).
 */
function normalisedEscapes(href: string): string {
  return href.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}

/**
 * A source's URL in the one form it is stored and compared in (docs/scheduler.md#source-urls): the WHATWG URL parser's
 * (`new URL()`, what fetch itself requests: scheme and host in lower case, an internationalised host in punycode, an
 * IPv4 address in dotted decimal, the scheme's default port dropped, `.` and `..` path segments resolved, what a
 * path may not hold as it is percent-encoded), with a host name's trailing dot dropped (`http://host.:7860` is
 * `http://host:7860`) and percent-escapes in RFC 3986's normal form (normalisedEscapes: `%2f` is `%2F`, `%7E` is `~`),
 * then without trailing slashes, as before (a platform's paths are put after it). `http://LOCALHOST:8080/` and
 * `http://localhost:8080` are the same source. undefined for a URL that parser cannot read (a port past 65535, a
 * host no address or name can be), which no call could reach.
 */
export function canonicalSourceUrl(url: string): string | undefined {
  try {
    const parsed = new URL(url.trim());
    // the fully qualified form of a DNS name (`host.`) is the same host; a host of dots alone is left as it is
    if (/[^.]\.$/.test(parsed.hostname)) parsed.hostname = parsed.hostname.slice(0, -1);
    return normaliseSourceUrl(normalisedEscapes(parsed.href));
  } catch {
    return undefined;
  }
}

/** Text for an error message: at most 500 characters. */
const clipped = (text: string): string => (text.length > 500 ? `${text.slice(0, 500)}…` : text);

/** The answer's text for an error message: compact, at most 500 characters. */
function answerText(body: unknown): string {
  return clipped(typeof body === 'string' ? body : JSON.stringify(body));
}

/** `<what> answered HTTP <status>: <the platform's answer>`, so its own words (`{"detail":"…"}`) reach the user. */
function answeredError(what: string, r: { status: number; body: unknown }): PlatformError {
  const text = r.body === null || r.body === '' ? '' : answerText(r.body);
  return new PlatformError(`${what} answered HTTP ${r.status}${text ? `: ${text}` : ''}`, r.status, text);
}

/** The most of one answer of a platform that is read (an answer past it fails its call, see call()). */
export const MAX_PLATFORM_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * The deepest nesting of arrays and objects a platform's JSON answer may have (an answer deeper fails its call, see
 * call()). Real answers nest a dozen levels (LangFlow's run answer); JSON.stringify and the serialisers that write
 * an answer out recurse, and ran out of stack on one a few thousand levels deep.
 */
export const MAX_PLATFORM_ANSWER_DEPTH = 200;

/** The most of a platform's version information kept on its source (characters of its JSON text). */
export const MAX_VERSION_INFO_CHARS = 16 * 1024;

async function call(
  t: PlatformTarget,
  method: 'GET' | 'POST',
  path: string,
  opts: { timeoutMs: number; body?: EncodedBody; signal?: AbortSignal },
): Promise<{ status: number; body: unknown }> {
  const keyHeaders = t.apiKey ? PLATFORMS[t.sourceType].keyHeaders(t.apiKey) : {};
  const headers: Record<string, string> = { accept: 'application/json', ...keyHeaders };
  if (opts.body !== undefined) headers['content-type'] = opts.body.contentType;
  const signals = [AbortSignal.timeout(opts.timeoutMs), ...(opts.signal ? [opts.signal] : [])];
  const shownPath = path.split('?')[0];
  let res: Response;
  try {
    // Redirects are followed within the source's own origin only (docs/scheduler.md#platforms): one to another origin
    // is an error before anything is sent there. fetch's own following went wherever a 3xx pointed (loopback, a
    // cloud's metadata address), and at first sent the source's X-API-Key along.
    res = await fetchFollowingRedirects(
      `${normaliseSourceUrl(t.url)}${path}`,
      { method, headers, body: opts.body?.text, signal: AbortSignal.any(signals) },
      Object.keys(keyHeaders),
      { otherOrigins: 'refuse' },
    );
  } catch (err) {
    const e = err as Error;
    if (e.name === 'TimeoutError') throw new PlatformTimeout(`${method} ${shownPath} timed out after ${opts.timeoutMs} ms`);
    if (e.name === 'AbortError') throw new PlatformError(`${method} ${shownPath} was cancelled`);
    // the Location's origin only (no user name, password, path or query): where it pointed, not what it carried
    if (err instanceof RedirectElsewhere) {
      throw new PlatformError(
        `${method} ${shownPath} answered HTTP ${err.status}, a redirect to another origin (${err.origin}), which is not followed: Armada calls a source's own origin (${err.from}) only; if the platform has moved there, change the source's url`,
        err.status,
      );
    }
    // an answer came (a redirect that cannot be followed): not a platform that cannot be reached, so never sent again
    if (err instanceof RedirectError) throw new PlatformError(`${method} ${shownPath} failed: ${err.message}`);
    const failure = fetchFailure(err);
    throw new PlatformUnreachable(`${method} ${shownPath} failed: ${failure.code ?? failure.reason}`);
  }
  let read: { text: string; truncated: boolean };
  try {
    read = await readBoundedText(res, MAX_PLATFORM_ANSWER_BYTES);
  } catch (err) {
    const failure = fetchFailure(err);
    throw new PlatformError(`${method} ${shownPath} failed while its answer was read: ${failure.code ?? failure.reason}`);
  }
  const { truncated } = read;
  // a platform may echo the key it was sent (in a refusal, an error): it goes no further than here
  const text = t.apiKey ? redactSecrets(read.text, [t.apiKey], '[key]') : read.text;
  if (truncated) {
    throw new PlatformError(
      `${method} ${shownPath} answered more than ${formatBytes(MAX_PLATFORM_ANSWER_BYTES)} (HTTP ${res.status}); Armada reads at most that much of a platform's answer: check the source's URL, or have the flow return less`,
      res.status,
    );
  }
  if (!text) return { status: res.status, body: null };
  const parsed = parseUntrustedJson(text, MAX_PLATFORM_ANSWER_DEPTH);
  if (!('error' in parsed)) return { status: res.status, body: parsed.value };
  if (parsed.error === 'not-json') return { status: res.status, body: text };
  throw new PlatformError(
    `${method} ${shownPath} answered JSON nested more than ${MAX_PLATFORM_ANSWER_DEPTH} levels deep (HTTP ${res.status}); Armada reads a platform's answer up to that depth: check the source's URL, or have the flow return a flatter answer`,
    res.status,
  );
}

/** Throws PlatformError unless the platform's health endpoint answers 2xx with the healthy status of its type. */
export async function checkHealth(t: PlatformTarget, timeoutMs = 5000): Promise<void> {
  const spec = PLATFORMS[t.sourceType];
  let check = { path: spec.healthPath, status: spec.healthyStatus };
  let r = await call(t, 'GET', check.path, { timeoutMs });
  if (r.status === 404 && spec.healthFallback) {
    check = spec.healthFallback;
    r = await call(t, 'GET', check.path, { timeoutMs });
  }
  if (r.status < 200 || r.status >= 300) throw answeredError('health check', r);
  const status = r.body && typeof r.body === 'object' ? (r.body as Record<string, unknown>).status : undefined;
  if (status !== check.status) throw new PlatformError(`health check answered status ${clipped(JSON.stringify(status ?? null))}, expected "${check.status}"`);
}

/** The platform's version information (an object), or null when it has no version endpoint (404). */
export async function readVersion(t: PlatformTarget, timeoutMs = 5000): Promise<Record<string, unknown> | null> {
  const r = await call(t, 'GET', PLATFORMS[t.sourceType].versionPath, { timeoutMs });
  if (r.status === 404) return null;
  if (r.status < 200 || r.status >= 300) throw answeredError('version endpoint', r);
  const info = plainObject(r.body) ?? { version: String(r.body) };
  const size = JSON.stringify(info).length;
  if (size > MAX_VERSION_INFO_CHARS) {
    throw new PlatformError(`version endpoint answered ${size} characters of version information; Armada keeps at most ${MAX_VERSION_INFO_CHARS}`, r.status);
  }
  return info;
}

/** The platform refused the key (HTTP 401 or 403 on an authenticated call): the client's mistake, with its words. */
export class PlatformKeyRejected extends PlatformError {}

/**
 * Health check, version, then the flow list, the platform's cheapest call that needs the key: a wrong or missing
 * key fails here (PlatformKeyRejected) rather than at the first run. Source creation and a PATCH of url, type or key;
 * the flows listed are what a PATCH checks its workflows' flow tasks against.
 */
export async function validatePlatform(t: PlatformTarget, timeoutMs = 5000): Promise<{ versionInfo: Record<string, unknown> | null; flows: RemoteFlow[] }> {
  await checkHealth(t, timeoutMs);
  const versionInfo = await readVersion(t, timeoutMs);
  try {
    return { versionInfo, flows: await listRemoteFlows(t, timeoutMs) };
  } catch (err) {
    if (err instanceof PlatformError && (err.httpStatus === 401 || err.httpStatus === 403)) {
      throw new PlatformKeyRejected(`the platform refused ${t.apiKey ? 'the API key' : 'the request without an API key'}: ${err.message}`, err.httpStatus, err.body);
    }
    throw err;
  }
}

/** The platform's runnable flows; a non-2xx answer throws with the platform's own text. */
export async function listRemoteFlows(t: PlatformTarget, timeoutMs = 10_000): Promise<RemoteFlow[]> {
  const spec = PLATFORMS[t.sourceType];
  const r = await call(t, 'GET', spec.flowsPath, { timeoutMs });
  if (r.status < 200 || r.status >= 300) throw answeredError(`GET ${spec.flowsPath.split('?')[0]}`, r);
  return spec.flows(r.body);
}

export interface FlowRunResult {
  status: number;
  body: unknown;
}

/** Runs a flow; a non-2xx answer throws a PlatformError carrying the status and the platform's text. */
export async function runRemoteFlow(t: PlatformTarget, flow: string, input: unknown, timeoutMs: number, signal?: AbortSignal): Promise<FlowRunResult> {
  const spec = PLATFORMS[t.sourceType];
  const text = typeof input === 'string' ? input : JSON.stringify(input ?? '');
  const r = await call(t, 'POST', spec.runPath(flow), { timeoutMs, body: spec.runBody(text), signal });
  if (r.status < 200 || r.status >= 300) throw answeredError(`flow ${flow}`, r);
  return r;
}

export type FlowMatch = { flow: RemoteFlow } | { error: 'none' | 'several'; candidates: RemoteFlow[] };

/**
 * Which of the platform's flows `wanted` names: an id, else an endpoint name, else a display name (that must be
 * unique). Ids and endpoint names are unique on the platform; display names are not.
 */
export function matchFlow(flows: RemoteFlow[], wanted: string): FlowMatch {
  const byId = flows.find((f) => f.id === wanted);
  if (byId) return { flow: byId };
  const byEndpoint = flows.find((f) => f.endpoint_name !== null && f.endpoint_name === wanted);
  if (byEndpoint) return { flow: byEndpoint };
  const byName = flows.filter((f) => f.name === wanted);
  if (byName.length === 1) return { flow: byName[0] as RemoteFlow };
  return byName.length ? { error: 'several', candidates: byName } : { error: 'none', candidates: [] };
}
