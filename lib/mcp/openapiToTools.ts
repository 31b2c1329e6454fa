/**
 * OpenAPI (3.x) and Swagger (2.0) operations → MCP tool definitions. Local `$ref`s are resolved; each operation's
 * path, query, header and body parameters become one flat JSON-Schema object, and the tool keeps the mapping back
 * from input property to where the value goes in the HTTP request.
 */
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { FileTooLargeError, NotAFileError, readRegularFile } from '../fs/regularFile';
import { fetchFailure } from '../http/fetchFailure';
import { fetchFollowingRedirects } from '../http/redirects';
import { formatBytes, readBoundedText } from '../http/readBounded';
import { redactSecrets } from '../secretText';
import { plainObject, recordOf } from '../untrustedJson';
import { redactUrlCredentials } from '../urlCredentials';

export type JsonObject = Record<string, unknown>;
export type JsonSchema = JsonObject;

/** Where one input property goes in the request. */
export interface ToolArgument {
  /** The property name in the tool's input schema. */
  property: string;
  in: 'path' | 'query' | 'header' | 'cookie' | 'body' | 'bodyField';
  /** The parameter / body field name on the wire. */
  name: string;
}

export interface ToolDefinition {
  /** MCP tool name (`[A-Za-z0-9_-]{1,64}`): the operationId, or `method_path` when there is none. */
  name: string;
  /** The document's operationId, if it has one. */
  operationId?: string;
  description: string;
  method: string;
  /** The path template, e.g. `/pets/{petId}`. */
  path: string;
  inputSchema: JsonSchema;
  arguments: ToolArgument[];
  /** The request body's media type (`application/json`, `application/x-www-form-urlencoded`), when there is a body. */
  bodyContentType?: string;
}

export interface ConvertedApi {
  title: string;
  /** The document's server URL (servers[0] / Swagger host+basePath), resolved against the document's own URL. */
  serverUrl?: string;
  /** Why the server URL the document names cannot be used (`file:///etc is not an http(s) URL`), when it names one. */
  serverUrlUnusable?: string;
  /** Where an API key goes, from the document's security schemes (default: the X-API-Key header). */
  apiKey: { in: 'header' | 'query'; name: string; bearer: boolean };
  tools: ToolDefinition[];
  /** Operations left out because the document describes them in a shape that cannot be read, with why (method '' = all of the path's). */
  skipped: { method: string; path: string; reason: string }[];
  /** The names of `include` and `exclude` that no operation has (neither its operationId nor its tool name). */
  unmatched: { include: string[]; exclude: string[] };
}

export interface ConvertOptions {
  /** Only these operations (operationId or tool name). */
  include?: string[];
  /** Not these operations (operationId or tool name). */
  exclude?: string[];
  /** The document's own URL, to resolve a relative server URL. */
  documentUrl?: string;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** A document that could not be read: the message names it, says why and what to do (the CLI prints it as it is). */
export class OpenApiDocumentError extends Error {
  override name = 'OpenApiDocumentError';
  constructor(
    message: string,
    /** The HTTP status the document's URL answered, when it answered one. */
    readonly status?: number,
    /** Why no answer came, when none did: the error code (ECONNREFUSED), else a few words (lib/http/fetchFailure.ts). */
    readonly unreachable?: string,
  ) {
    super(message);
  }
}

/** The most of a document that is read: the largest public ones are about a tenth of it. */
export const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;

/** A document's URL as messages show it: a password in it as `***` (fetch refuses such a URL, and says so). */
const shownSource = (source: string): string => redactUrlCredentials(source);

async function fetchDocument(source: string, headers: Record<string, string>, timeoutMs: number): Promise<string> {
  let res: Response;
  try {
    // the --header values (a key) are not sent on to another origin a redirect names
    res = await fetchFollowingRedirects(source, { headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.5', ...headers }, signal: AbortSignal.timeout(timeoutMs) }, Object.keys(headers));
  } catch (err) {
    const failure = fetchFailure(err);
    const shown = failure.reason === 'timed out' ? `timed out after ${timeoutMs} ms` : failure.reason;
    throw new OpenApiDocumentError(`cannot fetch the OpenAPI document ${shownSource(source)}: ${shown}; check the URL and that its server is running`, undefined, failure.code ?? shown);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new OpenApiDocumentError(`the OpenAPI document ${shownSource(source)} answered HTTP ${res.status}; check the URL (and --header, for a document that needs a key)`, res.status);
  }
  let read: { text: string; truncated: boolean };
  try {
    read = await readBoundedText(res, MAX_DOCUMENT_BYTES);
  } catch (err) {
    const failure = fetchFailure(err);
    throw new OpenApiDocumentError(`cannot fetch the OpenAPI document ${shownSource(source)}: ${failure.reason} while it was read; try again`, undefined, failure.code ?? failure.reason);
  }
  if (read.truncated) throw new OpenApiDocumentError(`the OpenAPI document ${shownSource(source)} is larger than ${formatBytes(MAX_DOCUMENT_BYTES)}; Armada reads at most that much of a document`);
  return read.text;
}

function readDocumentFile(source: string): string {
  const file = source.startsWith('file://') ? fileURLToPath(source) : source;
  try {
    // by type and bounded (lib/fs/regularFile.ts): a FIFO blocked the read until a writer came, a device never ended
    return readRegularFile(file, MAX_DOCUMENT_BYTES);
  } catch (err) {
    if (err instanceof FileTooLargeError) throw new OpenApiDocumentError(`${shownSource(source)} is larger than ${formatBytes(MAX_DOCUMENT_BYTES)}; Armada reads at most that much of a document`);
    const code = (err as NodeJS.ErrnoException).code;
    const why = err instanceof NotAFileError ? `it is ${err.kind}, not a file` : code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw new OpenApiDocumentError(`cannot read ${shownSource(source)}: ${why}; give the path of the document's file or its http(s) URL`);
  }
}

/** Reads an OpenAPI document (JSON or YAML) from an http(s) URL or a file; throws OpenApiDocumentError saying why not. */
export async function loadOpenApiDocument(source: string, headers: Record<string, string> = {}, timeoutMs = 30_000): Promise<JsonObject> {
  const text = /^https?:\/\//i.test(source) ? await fetchDocument(source, headers, timeoutMs) : readDocumentFile(source);
  const json = text.trimStart().startsWith('{');
  let doc: unknown;
  try {
    doc = json ? JSON.parse(text) : YAML.parse(text);
  } catch (err) {
    // YAML's message goes on with an excerpt of the document: its first line says what and where
    // (and JSON.parse's quotes a few characters of it): a key the server echoed there is not shown
    const why = redactSecrets(((err as Error).message ?? String(err)).split('\n')[0]?.replace(/:$/, '') ?? '', Object.values(headers), '[key]');
    throw new OpenApiDocumentError(`${shownSource(source)} is not valid ${json ? 'JSON' : 'YAML'} (${why}); fix the document`);
  }
  if (!doc || typeof doc !== 'object' || (!('openapi' in doc) && !('swagger' in doc))) throw new OpenApiDocumentError(`${shownSource(source)} is not an OpenAPI or Swagger document`);
  return doc as JsonObject;
}

function pointer(doc: JsonObject, ref: string): unknown {
  if (!ref.startsWith('#')) throw new Error(`only local $refs are supported, not ${ref}`);
  const parts = ref.slice(1).split('/').filter(Boolean);
  // the whole document inlined would bring every other operation's $refs (and their faults) into this one
  if (!parts.length) throw new Error(`$ref "${ref}" points to the whole document, not to a part of it`);
  return parts
    .map((p) => decodeURIComponent(p).replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as JsonObject)[k] : undefined), doc);
}

/**
 * The most objects and lists one path item's inlined schemas may have. Schemas that share schemas (S0 uses S1 twice,
 * S1 uses S2 twice …) double with every level when each $ref is copied in: 22 such levels, a 2.8 KB document, were
 * 4 million copies, and the converter ran out of time and memory. Past this, a $ref is left as a placeholder.
 */
export const MAX_INLINED_NODES = 10_000;

/** What is left of the budget of MAX_INLINED_NODES while one path item is resolved. */
export interface InlineBudget {
  nodes: number;
}

/** An object whose keys are exactly the given ones, `__proto__` included (an assignment would set the prototype). */
function objectOf(entries: Iterable<readonly [string, unknown]>): JsonObject {
  return Object.fromEntries(entries) as JsonObject;
}

/**
 * A copy of `node` with every local `$ref` replaced by its target; a cyclic reference becomes a placeholder that
 * says so, and so does every $ref met once `budget` is spent.
 */
export function resolveRefs(doc: JsonObject, node: unknown, seen: string[] = [], budget: InlineBudget = { nodes: MAX_INLINED_NODES }): unknown {
  if (!node || typeof node !== 'object') return node;
  budget.nodes--;
  if (Array.isArray(node)) return node.map((n) => resolveRefs(doc, n, seen, budget));
  const obj = node as JsonObject;
  if (typeof obj.$ref === 'string') {
    const ref = obj.$ref;
    if (seen.includes(ref)) return { description: `(recursive: ${ref})` };
    if (budget.nodes <= 0) return { description: `(not expanded: ${ref}; the operation's schemas are too large to inline)` };
    const target = pointer(doc, ref);
    if (target === undefined) throw new Error(`unresolved $ref ${ref}`);
    const { $ref: _drop, ...siblings } = obj;
    const resolved = resolveRefs(doc, target, [...seen, ref], budget) as JsonObject;
    return Object.keys(siblings).length ? objectOf([...Object.entries(resolved), ...Object.entries(resolveRefs(doc, siblings, seen, budget) as JsonObject)]) : resolved;
  }
  return objectOf(Object.entries(obj).map(([k, v]) => [k, resolveRefs(doc, v, seen, budget)] as const));
}

/**
 * A path item without what no tool reads: its operations' `responses` and `callbacks` (the largest schemas of most
 * documents, and a $ref there that points nowhere used to leave the operation out).
 */
function inputsOnly(item: unknown): unknown {
  const o = plainObject(item);
  if (!o || typeof o.$ref === 'string') return item;
  return objectOf(
    Object.entries(o).map(([k, v]) => {
      const op = HTTP_METHODS.includes(k) ? plainObject(v) : undefined;
      return [k, op ? objectOf(Object.entries(op).filter(([field]) => field !== 'responses' && field !== 'callbacks')) : v] as const;
    }),
  );
}

function toolName(method: string, path: string, operationId: unknown): string {
  const raw = typeof operationId === 'string' && operationId ? operationId : `${method}_${path.replace(/[{}]/g, '')}`;
  const name = raw.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/_+/g, '_').replace(/^_|_$/g, '');
  return (name || method).slice(0, 64);
}

/** OpenAPI 3.0 `nullable` → a JSON-Schema `null` type; `readOnly` properties are dropped from inputs. */
function inputSchemaOf(schema: unknown): JsonSchema {
  if (!schema || typeof schema !== 'object') return {};
  return cleanSchema(schema) as JsonSchema;
}

function cleanSchema(schema: unknown): unknown {
  if (!schema || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map(cleanSchema);
  const entries: [string, unknown][] = [];
  const readOnly = new Set<string>();
  for (const [k, v] of Object.entries(schema as JsonObject)) {
    if (k === 'nullable' || k === 'example' || k === 'xml' || k === 'discriminator' || k === 'externalDocs') continue;
    if (k === 'properties' && v && typeof v === 'object') {
      for (const [pk, pv] of Object.entries(v as JsonObject)) if ((pv as JsonObject | null)?.readOnly) readOnly.add(pk);
      // a property may be named like anything, `__proto__` and `constructor` included: own keys, never assigned
      entries.push([k, objectOf(Object.entries(v as JsonObject).filter(([pk]) => !readOnly.has(pk)).map(([pk, pv]) => [pk, cleanSchema(pv)] as const))]);
    } else if (k === 'enum' || k === 'const' || k === 'default' || k === 'examples' || k === 'required') entries.push([k, v]);
    else entries.push([k, cleanSchema(v)]);
  }
  const s = objectOf(entries);
  if ((schema as JsonObject).nullable === true && typeof s.type === 'string') s.type = [s.type, 'null'];
  // a readOnly property dropped is no longer required; a required name this object's properties do not list stays
  // (an if/then's `then: {required: ["script"]}` names a property of the object it applies to, not of its own)
  if (Array.isArray(s.required)) s.required = (s.required as unknown[]).filter((r) => typeof r === 'string' && !readOnly.has(r));
  return s;
}

/** Sets an own property, also one named `__proto__` (which an assignment would take for the prototype). */
function setOwn(o: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Swagger 2.0 puts type/format/enum on the parameter itself. */
function swagger2ParamSchema(p: JsonObject): JsonSchema {
  const keys = ['type', 'format', 'items', 'enum', 'default', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'uniqueItems', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
  const s: JsonObject = {};
  for (const k of keys) if (p[k] !== undefined) s[k] = p[k];
  if (s.type === 'file') s.type = 'string';
  return s;
}

function serverOf(doc: JsonObject, documentUrl?: string): Pick<ConvertedApi, 'serverUrl' | 'serverUrlUnusable'> {
  const { url, unusable } = serverUrlOf(doc, documentUrl);
  return { serverUrl: url, serverUrlUnusable: unusable };
}

/** The document's server URL (`url`), or why the one it names cannot be used (`unusable`); neither when it names none. */
function serverUrlOf(doc: JsonObject, documentUrl?: string): { url?: string; unusable?: string } {
  let url: string | undefined;
  if (typeof doc.swagger === 'string') {
    if (typeof doc.host === 'string') {
      const schemes = strings(doc.schemes);
      const scheme = schemes.includes('https') ? 'https' : (schemes[0] ?? 'https');
      url = `${scheme}://${doc.host}${typeof doc.basePath === 'string' ? doc.basePath : ''}`;
    } else if (typeof doc.basePath === 'string') url = doc.basePath;
  } else {
    const server = objects(doc.servers)[0];
    if (server && typeof server.url === 'string') {
      url = server.url.replace(/\{([^}]+)\}/g, (_m, v: string) => {
        const d = recordOf(recordOf(server.variables)[v]).default;
        return typeof d === 'string' || typeof d === 'number' ? String(d) : '';
      });
    }
  }
  const fetched = documentUrl !== undefined && /^https?:/i.test(documentUrl);
  try {
    if (url === undefined) return fetched ? { url: new URL(documentUrl as string).origin } : {};
    if (/^https?:\/\//i.test(url)) return { url };
    // a URL of another scheme (file:, ftp:) is named, not taken for no URL at all: the caller asks for --base-url
    if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return { unusable: `${url} is not an http(s) URL` };
    if (!fetched) return { unusable: `${url} is relative, and the document was read from a file` };
    const resolved = new URL(url, documentUrl as string);
    return /^https?:$/.test(resolved.protocol) ? { url: resolved.toString() } : { unusable: `${url} is not an http(s) URL` };
  } catch {
    return { unusable: `${url} is not a URL` };
  }
}

function apiKeyPlacement(doc: JsonObject): ConvertedApi['apiKey'] {
  const all = objects(Object.values(recordOf(recordOf(doc.components).securitySchemes ?? doc.securityDefinitions)));
  const key = all.find((s) => s.type === 'apiKey' && (s.in === 'header' || s.in === 'query') && typeof s.name === 'string' && s.name);
  if (key) return { in: key.in as 'header' | 'query', name: String(key.name), bearer: false };
  if (all.some((s) => s.type === 'http' && String(s.scheme).toLowerCase() === 'bearer')) return { in: 'header', name: 'Authorization', bearer: true };
  return { in: 'header', name: 'X-API-Key', bearer: false };
}

function matches(list: string[] | undefined, t: { name: string; operationId?: string }): boolean {
  return !!list?.some((x) => x === t.name || x === t.operationId);
}

/** The objects of a list in the document (a parameter list, say); anything that is not a list of objects gives none. */
function objects(v: unknown): JsonObject[] {
  return Array.isArray(v) ? v.filter((x): x is JsonObject => plainObject(x) !== undefined) : [];
}

/** The strings of a list in the document (`required`, `consumes`). */
function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * A path item with its $refs resolved. When that fails, its shared parts and each operation are resolved apart, so
 * that the message names the operation at fault and the path's other operations are still served; `undefined` (and
 * the path in `skipped`) when the shared parts cannot be read.
 */
function resolvedPathItem(doc: JsonObject, path: string, raw: unknown, skipped: ConvertedApi['skipped']): JsonObject | undefined {
  const item = inputsOnly(raw);
  try {
    return recordOf(resolveRefs(doc, item, [], { nodes: MAX_INLINED_NODES }));
  } catch (err) {
    const o = plainObject(item);
    const budget = { nodes: MAX_INLINED_NODES };
    const operations = o && typeof o.$ref !== 'string' ? Object.entries(o).filter(([k]) => HTTP_METHODS.includes(k)) : [];
    let resolved: JsonObject;
    try {
      if (!o || !operations.length) throw err;
      resolved = recordOf(resolveRefs(doc, objectOf(Object.entries(o).filter(([k]) => !HTTP_METHODS.includes(k))), [], budget));
    } catch (shared) {
      skipped.push({ method: '', path, reason: (shared as Error).message }); // every operation of the path
      return undefined;
    }
    for (const [method, op] of operations) {
      try {
        setOwn(resolved, method, resolveRefs(doc, op, [], budget));
      } catch (opErr) {
        skipped.push({ method: method.toUpperCase(), path, reason: (opErr as Error).message });
      }
    }
    return resolved;
  }
}

export function openapiToTools(docIn: JsonObject, opts: ConvertOptions = {}): ConvertedApi {
  const doc = docIn;
  const swagger2 = typeof doc.swagger === 'string';
  const info = recordOf(doc.info);
  const tools: ToolDefinition[] = [];
  const skipped: ConvertedApi['skipped'] = [];
  const names = new Set<string>();
  const named = new Set<string>();
  for (const [path, itemRaw] of Object.entries(recordOf(doc.paths))) {
    const item = resolvedPathItem(doc, path, itemRaw, skipped);
    if (!item) continue;
    for (const method of HTTP_METHODS) {
      const op = item[method] as JsonObject | undefined;
      if (!op || typeof op !== 'object' || Array.isArray(op)) continue;
      try {
        const tool = operationTool(doc, swagger2, item, op, method, path, names);
        // every operation's name is taken, served or not: a tool has the name --list shows whatever --include and
        // --exclude say (an operationId's second operation was `x` with `--include x_2`, so that named nothing)
        names.add(tool.name);
        for (const x of [...(opts.include ?? []), ...(opts.exclude ?? [])]) if (matches([x], tool)) named.add(x);
        if (opts.include?.length && !matches(opts.include, tool)) continue;
        if (matches(opts.exclude, tool)) continue;
        tools.push(tool);
      } catch (err) {
        // one operation the converter cannot read (a shape no document of the specification has) leaves the others
        skipped.push({ method: method.toUpperCase(), path, reason: (err as Error).message });
      }
    }
  }
  const unmatched = { include: (opts.include ?? []).filter((x) => !named.has(x)), exclude: (opts.exclude ?? []).filter((x) => !named.has(x)) };
  return { title: typeof info.title === 'string' ? info.title : 'API', ...serverOf(doc, opts.documentUrl), apiKey: apiKeyPlacement(doc), tools, skipped, unmatched };
}

/** One operation as a tool. */
function operationTool(doc: JsonObject, swagger2: boolean, item: JsonObject, op: JsonObject, method: string, path: string, names: Set<string>): ToolDefinition {
  // an operation's parameters override the path item's by (in, name)
  const params = new Map<string, JsonObject>();
  for (const p of [...objects(item.parameters), ...objects(op.parameters)]) {
    if (typeof p.in === 'string' && typeof p.name === 'string') params.set(`${p.in}:${p.name}`, p);
  }

  const properties: JsonObject = {};
  const required: string[] = [];
  const args: ToolArgument[] = [];
  let bodySchema: JsonSchema | undefined;
  let bodyRequired = false;
  let bodyContentType: string | undefined;
  const formFields: JsonObject[] = [];

  for (const p of params.values()) {
    const where = String(p.in);
    if (where === 'body') {
      bodySchema = inputSchemaOf(p.schema);
      bodyRequired = p.required === true;
      bodyContentType = strings(op.consumes ?? doc.consumes).find((c) => c.includes('json')) ?? 'application/json';
      continue;
    }
    if (where === 'formData') {
      formFields.push(p);
      continue;
    }
    if (!['path', 'query', 'header', 'cookie'].includes(where)) continue;
    const name = String(p.name);
    let property = name;
    if (Object.hasOwn(properties, property)) property = `${where}_${name}`;
    const schema = swagger2 ? swagger2ParamSchema(p) : inputSchemaOf(p.schema ?? recordOf(Object.values(recordOf(p.content))[0]).schema);
    setOwn(properties, property, { ...schema, ...(typeof p.description === 'string' && p.description ? { description: p.description } : {}) });
    if (p.required === true || where === 'path') required.push(property);
    args.push({ property, in: where as ToolArgument['in'], name });
  }
  // a `{name}` of the path template the document does not declare: still an argument (without it, no call could fill it)
  for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
    if (name === undefined || args.some((a) => a.in === 'path' && a.name === name)) continue;
    const property = Object.hasOwn(properties, name) ? `path_${name}` : name;
    setOwn(properties, property, { type: 'string', minLength: 1, description: 'path parameter (not declared in the document)' });
    required.push(property);
    args.push({ property, in: 'path', name });
  }

  if (formFields.length) {
    bodySchema = { type: 'object', properties: Object.fromEntries(formFields.map((f) => [String(f.name), swagger2ParamSchema(f)])), required: formFields.filter((f) => f.required).map((f) => String(f.name)) };
    bodyContentType = 'application/x-www-form-urlencoded';
    bodyRequired = formFields.some((f) => f.required);
  }
  if (!swagger2 && op.requestBody) {
    const rb = recordOf(op.requestBody);
    const content = recordOf(rb.content);
    const type = Object.keys(content).find((t) => t.includes('json')) ?? Object.keys(content).find((t) => t === 'application/x-www-form-urlencoded') ?? Object.keys(content)[0];
    if (type) {
      bodySchema = inputSchemaOf(recordOf(content[type]).schema ?? {});
      bodyContentType = type;
      bodyRequired = rb.required === true;
    }
  }

  // fetch sends no body with GET or HEAD: a body the document gives one would be inputs that are never sent
  if (method === 'get' || method === 'head') bodySchema = undefined;
  // a flattened body that takes no other fields says so on the tool's inputs, which take no others either (the call
  // refuses an argument the tool does not take: unknownArgumentsError)
  let closed = false;
  if (bodySchema) {
    const bodyProps = bodySchema.type === 'object' || bodySchema.properties ? recordOf(bodySchema.properties) : undefined;
    const clash = bodyProps && Object.keys(bodyProps).some((k) => Object.hasOwn(properties, k));
    if (bodyProps && Object.keys(bodyProps).length && !clash && !bodySchema.additionalProperties && !bodySchema.oneOf && !bodySchema.anyOf) {
      // an object body is flattened: its fields become top-level inputs
      const bodyReq = new Set(strings(bodySchema.required));
      closed = bodySchema.additionalProperties === false;
      for (const [k, v] of Object.entries(bodyProps)) {
        setOwn(properties, k, v);
        if (bodyReq.has(k)) required.push(k);
        args.push({ property: k, in: 'bodyField', name: k });
      }
    } else {
      const property = Object.hasOwn(properties, 'body') ? 'requestBody' : 'body';
      properties[property] = { ...bodySchema, description: typeof bodySchema.description === 'string' ? bodySchema.description : 'The request body.' };
      if (bodyRequired) required.push(property);
      args.push({ property, in: 'body', name: property });
    }
  }

  let name = toolName(method, path, op.operationId);
  for (let i = 2; names.has(name); i++) name = `${name.slice(0, 60)}_${i}`;
  const description = [op.summary, op.description].filter((x) => typeof x === 'string' && x).join('\n\n') || `${method.toUpperCase()} ${path}`;
  return {
    name,
    operationId: typeof op.operationId === 'string' ? op.operationId : undefined,
    description: op.deprecated ? `(deprecated) ${description}` : description,
    method: method.toUpperCase(),
    path,
    inputSchema: { type: 'object', properties, ...(required.length ? { required: [...new Set(required)] } : {}), ...(closed ? { additionalProperties: false } : {}) },
    arguments: args,
    bodyContentType,
  };
}
