/**
 * An MCP server whose tools are HTTP operations (from openapiToTools): a call becomes one HTTP request, and the
 * response comes back as text, truncated with a note past a configurable size.
 */
import { fetchFailureReason } from '../http/fetchFailure';
import { formatBytes, readBoundedText } from '../http/readBounded';
import { fetchFollowingRedirects, RedirectElsewhere, RedirectError } from '../http/redirects';
import { redactSecrets } from '../secretText';
import { redactUrlCredentials } from '../urlCredentials';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcStdioTransport } from './jsonRpcStdio';
import type { JsonSchema, ToolDefinition } from './openapiToTools';
import { checkedPath, cookieValue, formValue, headerValue, nonFiniteNumberPath, pathSegment, queryValue, unknownArgumentsError } from './requestValues';

export const DEFAULT_MAX_RESPONSE_CHARS = 50_000;

/** Where and how a tool's requests are sent. */
export interface ToolTarget {
  baseUrl: string;
  /** Sent with every request (API key, extra `--header`s). */
  headers: Record<string, string>;
  /** Query parameters sent with every request (an API key that goes in the query). */
  query?: Record<string, string>;
  /**
   * Keys this target sends that an answer must not show (the API key however it is sent); the values of `query` and of
   * credential headers (targetSecrets) are added to them.
   */
  secrets?: string[];
}

/** Headers whose value is a credential: `Authorization`, cookies, and names that say key, token, secret or password. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|key|token|secret|passw|auth|session|signature/i;

/**
 * What the service must not hand back to the model through a tool's answer: the target's keys, its query values and
 * its credential headers' values (also without their scheme: the `<key>` of `Bearer <key>`, which an echo may quote
 * alone). docs/tools.md, "Keys echoed by a service".
 */
export function targetSecrets(target: ToolTarget): string[] {
  const out = [...(target.secrets ?? []), ...Object.values(target.query ?? {})];
  for (const [name, value] of Object.entries(target.headers)) {
    if (!CREDENTIAL_HEADER.test(name)) continue;
    out.push(value);
    const scheme = /^[A-Za-z][A-Za-z0-9._~+/-]*\s+(\S.*)$/.exec(value);
    if (scheme?.[1]) out.push(scheme[1]);
  }
  return out;
}

export interface ServedTool {
  tool: ToolDefinition;
  target: ToolTarget;
}

export interface ToolServerOptions {
  name: string;
  version: string;
  /** Responses longer than this many characters are cut, with a note saying so. */
  maxResponseChars?: number;
  timeoutMs?: number;
}

export interface ToolCallResult {
  text: string;
  isError: boolean;
}

/**
 * Builds the request of one tool call: URL (base + path + query), headers and body. `shownUrl` is the URL without the
 * target's own query parameters (an API key that goes in the query), for messages the model and logs see.
 */
export function buildRequest(served: ServedTool, args: Record<string, unknown>): { url: string; shownUrl: string; init: RequestInit } {
  const { tool, target } = served;
  let path = tool.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5', ...target.headers };
  let body: unknown;
  const bodyFields: Record<string, unknown> = {};
  let hasBodyFields = false;
  const schemas = (tool.inputSchema.properties ?? {}) as Record<string, JsonSchema>;
  const unknown = unknownArgumentsError(tool.name, args, tool.arguments.map((a) => a.property));
  if (unknown) throw new Error(unknown);
  const huge = nonFiniteNumberPath(args);
  if (huge !== undefined) throw new Error(`argument ${huge} must be a number a double can hold (at most about ±1.8e308); nothing was sent`);
  for (const a of tool.arguments) {
    const v = args[a.property];
    if (v === undefined) continue;
    switch (a.in) {
      case 'path':
        // an empty, `.` or `..` segment would call another resource (`/items/` is the collection, not an item)
        path = path.replace(`{${a.name}}`, pathSegment(a.name, v, Object.hasOwn(schemas, a.property) ? schemas[a.property] : undefined));
        break;
      case 'query':
        if (Array.isArray(v)) for (const x of v) query.append(a.name, queryValue(a.name, x));
        else query.append(a.name, queryValue(a.name, v));
        break;
      case 'header':
        // refused here: fetch's own refusal read as a service that is down
        headers[a.name.toLowerCase()] = headerValue(a.name, v);
        break;
      case 'cookie':
        headers.cookie = [headers.cookie, `${a.name}=${cookieValue(a.name, v)}`].filter(Boolean).join('; ');
        break;
      case 'body':
        body = v;
        break;
      case 'bodyField':
        // an own property even when the field is named `__proto__` (an assignment would set the prototype)
        Object.defineProperty(bodyFields, a.name, { value: v, enumerable: true, writable: true, configurable: true });
        hasBodyFields = true;
        break;
    }
  }
  const missing = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  if (missing.length) throw new Error(`missing path parameter(s): ${missing.join(', ')}`);
  checkedPath(path, tool.path);
  if (hasBodyFields) body = { ...(body && typeof body === 'object' ? (body as object) : {}), ...bodyFields };
  const init: RequestInit = { method: tool.method, headers };
  if (body !== undefined && tool.method !== 'GET' && tool.method !== 'HEAD') {
    if (tool.bodyContentType === 'application/x-www-form-urlencoded') {
      init.body = new URLSearchParams(Object.entries(body as Record<string, unknown>).map(([k, v]): [string, string] => [k, formValue(k, v)])).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else {
      init.body = JSON.stringify(body);
      headers['content-type'] = tool.bodyContentType?.includes('json') ? tool.bodyContentType : 'application/json';
    }
  }
  const base = target.baseUrl.replace(/\/+$/, '');
  const shownQs = query.toString();
  const qs = [new URLSearchParams(target.query ?? {}).toString(), shownQs].filter(Boolean).join('&');
  return { url: `${base}${path}${qs ? `?${qs}` : ''}`, shownUrl: `${base}${path}${shownQs ? `?${shownQs}` : ''}`, init };
}

/** The most of one answer that is read (more when `max` characters could take more in UTF-8). */
const MAX_READ_BYTES = 16 * 1024 * 1024;

/** The first `max` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair (an emoji's halves). */
function head(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/**
 * Cuts text past `max` characters and says how much was left out. Never inside a surrogate pair: half an emoji is a
 * lone surrogate, which the answer's JSON carries as `\ud83d` and a client's UTF-8 encoder refuses.
 */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const shown = head(text, max);
  return `${shown}\n\n[truncated: showing the first ${shown.length} of ${text.length} characters]`;
}

/**
 * Runs one tool call; HTTP errors are results with isError (the model sees the status and body), not exceptions.
 * The target's keys are taken out of every answer before it is cut to size (a cut through a key would leave its first
 * characters): a service may echo the key it was sent, in its body (`{"error":"invalid key sk-…"}`), a header it
 * reflects into its body or an error message, and the answer goes to the model and from there anywhere.
 */
export async function callTool(served: ServedTool, args: Record<string, unknown>, opts: { maxResponseChars?: number; timeoutMs?: number } = {}): Promise<ToolCallResult> {
  const max = opts.maxResponseChars ?? DEFAULT_MAX_RESPONSE_CHARS;
  const secrets = targetSecrets(served.target);
  const clean = (text: string) => redactSecrets(text, secrets, '[key]');
  let req: ReturnType<typeof buildRequest>;
  try {
    req = buildRequest(served, args);
  } catch (err) {
    return { text: clean((err as Error).message), isError: true };
  }
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const signal = AbortSignal.timeout(timeoutMs);
  const what = `${served.tool.method} ${req.shownUrl}`;
  let res: Response;
  try {
    // a redirect is followed within the target's own origin only (docs/tools.md, "Redirects"): one to another origin
    // is a tool error before anything is sent there. Until session 53 it was followed (without the key), so an answer
    // could make the tool server request any address it reaches and hand what came back to the model.
    res = await fetchFollowingRedirects(req.url, { ...req.init, signal }, Object.keys(served.target.headers), { otherOrigins: 'refuse' });
  } catch (err) {
    // the Location's origin only (no user name, password, path or query), as the scheduler's sources say it
    if (err instanceof RedirectElsewhere) {
      return {
        text: clean(
          `${what} answered HTTP ${err.status}, a redirect to another origin (${err.origin}), which is not followed: the tools call their service's own origin (${err.from}) only; if the service has moved there, give the tools its new URL`,
        ),
        isError: true,
      };
    }
    // an answer came, so "check that the service is running" would mislead
    if (err instanceof RedirectError) return { text: clean(`${what} failed: ${err.message}`), isError: true };
    // never err.message alone (undici's is "fetch failed" whatever happened), never req.url (it may carry the key)
    const why = fetchFailureReason(err);
    if (why === 'timed out') return { text: clean(`${what} failed: no answer within ${timeoutMs / 1000} s; the service may be overloaded or stuck`), isError: true };
    return { text: clean(`${what} failed: ${why}; check that the service at ${redactUrlCredentials(served.target.baseUrl.replace(/\/+$/, ''))} is running`), isError: true };
  }
  const status = clean(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
  // at most MAX_READ_BYTES (or what `max` characters can take in UTF-8): a larger answer is shown cut, the rest unread
  const limit = Math.max(4 * max, MAX_READ_BYTES);
  let read: { text: string; truncated: boolean };
  try {
    read = await readBoundedText(res, limit);
  } catch (err) {
    // a result the model can read, not a protocol error: the request was sent, and may have taken effect
    const why = signal.aborted ? `no more of it within ${timeoutMs / 1000} s` : fetchFailureReason(err);
    return { text: clean(`${what} answered HTTP ${res.status}, then its answer was cut off: ${why}; try again`), isError: true };
  }
  let text = clean(read.text);
  if (read.truncated) {
    const shown = head(`${status}\n\n${text}`, max);
    return { text: `${shown}\n\n[truncated: the answer was longer than ${formatBytes(limit)}; showing its first ${shown.length} characters]`, isError: res.status >= 400 };
  }
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    try {
      text = clean(JSON.stringify(JSON.parse(text), null, 2));
    } catch {
      // not actually JSON: return it as it came
    }
  }
  return { text: truncate(text ? `${status}\n\n${text}` : status, max), isError: res.status >= 400 };
}

/** The MCP server over a set of tools (not yet connected to a transport). */
export function createToolServer(tools: ServedTool[], opts: ToolServerOptions): Server {
  const byName = new Map(tools.map((t) => [t.tool.name, t]));
  const server = new Server({ name: opts.name, version: opts.version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map(({ tool }) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as { type: 'object' } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const served = byName.get(request.params.name);
    // an unknown tool is a protocol error (JSON-RPC -32602, invalid params), not a tool result
    if (!served) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    const r = await callTool(served, (request.params.arguments ?? {}) as Record<string, unknown>, opts);
    return { content: [{ type: 'text' as const, text: r.text }], isError: r.isError };
  });
  return server;
}

/** Serves the tools over stdio until stdin closes or a SIGINT/SIGTERM arrives. */
export async function serveStdio(tools: ServedTool[], opts: ToolServerOptions): Promise<void> {
  const server = createToolServer(tools, opts);
  // the methods createToolServer's server answers: a request of one of them with params not its own is a -32602
  const transport = new JsonRpcStdioTransport(new Set(['initialize', 'ping', 'tools/list', 'tools/call']));
  await server.connect(transport);
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    process.stdin.once('end', done);
    process.stdin.once('close', done);
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
    server.onclose = done;
  });
  await server.close().catch(() => undefined);
}
