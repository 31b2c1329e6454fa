/** The converter on its own: Swagger 2.0, $refs (incl. cycles), flattening, name clashes, include/exclude. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { curate } from '../../lib/mcp/armadaTools';
import { openapiToTools } from '../../lib/mcp/openapiToTools';
import { buildRequest, callTool, truncate } from '../../lib/mcp/toolServer';

const swagger2 = {
  swagger: '2.0',
  info: { title: 'Store', version: '1' },
  host: 'store.example.test',
  basePath: '/api',
  schemes: ['http', 'https'],
  securityDefinitions: { key: { type: 'apiKey', in: 'query', name: 'api_key' } },
  definitions: {
    Order: { type: 'object', required: ['item'], properties: { item: { type: 'string' }, qty: { type: 'integer', default: 1 }, parent: { $ref: '#/definitions/Order' } } },
  },
  paths: {
    '/orders/{orderId}': {
      put: {
        operationId: 'updateOrder',
        parameters: [
          { name: 'orderId', in: 'path', required: true, type: 'string' },
          { name: 'dryRun', in: 'query', type: 'boolean' },
          { name: 'body', in: 'body', required: true, schema: { $ref: '#/definitions/Order' } },
        ],
        responses: { 200: { description: 'ok' } },
      },
    },
    '/upload': { post: { parameters: [{ name: 'file', in: 'formData', type: 'file', required: true }, { name: 'note', in: 'formData', type: 'string' }], responses: { 200: { description: 'ok' } } } },
  },
};

describe('openapiToTools', () => {
  test('Swagger 2.0: server from host/basePath, body $ref (cyclic) flattened, formData, generated names, query API key', () => {
    const api = openapiToTools(swagger2);
    expect(api.serverUrl).toBe('https://store.example.test/api');
    expect(api.apiKey).toEqual({ in: 'query', name: 'api_key', bearer: false });
    const update = api.tools.find((t) => t.name === 'updateOrder');
    expect(update?.inputSchema).toMatchObject({
      type: 'object',
      required: ['orderId', 'item'],
      properties: { orderId: { type: 'string' }, dryRun: { type: 'boolean' }, item: { type: 'string' }, qty: { type: 'integer', default: 1 }, parent: { description: '(recursive: #/definitions/Order)' } },
    });
    const upload = api.tools.find((t) => t.path === '/upload');
    expect(upload?.name).toBe('post_upload');
    expect(upload?.bodyContentType).toBe('application/x-www-form-urlencoded');
    const req = buildRequest({ tool: update as never, target: { baseUrl: 'http://h/api/', headers: {}, query: { api_key: 'k' } } }, { orderId: 'a/b', dryRun: true, item: 'x', qty: 2 });
    expect(req.url).toBe('http://h/api/orders/a%2Fb?api_key=k&dryRun=true');
    expect(req.init.method).toBe('PUT');
    expect(JSON.parse(req.init.body as string)).toEqual({ item: 'x', qty: 2 });
  });

  test('OpenAPI 3: a body property clashing with a parameter keeps the body whole; include/exclude; relative servers', () => {
    const doc = {
      openapi: '3.1.0',
      info: { title: 'T', version: '1' },
      servers: [{ url: '/v{major}', variables: { major: { default: '2' } } }],
      components: { securitySchemes: { b: { type: 'http', scheme: 'bearer' } } },
      paths: {
        '/things/{id}': {
          patch: {
            operationId: 'patchThing',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
            requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } } } } } },
            responses: {},
          },
          get: { operationId: 'getThing', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: {} },
        },
      },
    };
    const api = openapiToTools(doc, { documentUrl: 'http://host:1/docs/openapi.json', exclude: ['getThing'] });
    expect(api.serverUrl).toBe('http://host:1/v2');
    expect(api.apiKey).toEqual({ in: 'header', name: 'Authorization', bearer: true });
    expect(api.tools.map((t) => t.name)).toEqual(['patchThing']);
    expect(api.tools[0]?.inputSchema).toMatchObject({ required: ['id'], properties: { id: { type: 'string' }, body: { type: 'object' } } });
    expect(openapiToTools(doc, { include: ['getThing'] }).tools.map((t) => t.name)).toEqual(['getThing']);
  });

  test('any field of a document replaced by a value of another type: no throw; an operation that still cannot be read is left out and named, the others served', () => {
    const doc3 = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'http://h/v1' }],
      components: { schemas: { A: { type: 'object', required: ['a'], properties: { a: { type: 'string' }, self: { $ref: '#/components/schemas/A' } } } } },
      paths: {
        '/a/{id}': {
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          post: {
            operationId: 'postA',
            summary: 's',
            parameters: [{ name: 'q', in: 'query', schema: { type: 'integer' } }, { name: 'c', in: 'cookie', content: { 'text/plain': { schema: { type: 'string' } } } }],
            requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/A' } } } },
          },
        },
        '/b': { get: { operationId: 'getB' } },
      },
    };
    const hostile: unknown[] = [null, 5, 'x', true, [], [null, 7, 'y'], {}, { $ref: '#/nope' }];
    const paths = (v: unknown, at: string[] = []): string[][] =>
      v && typeof v === 'object' ? Object.entries(v).flatMap(([k, c]) => [[...at, k], ...paths(c, [...at, k])]) : [];
    let cases = 0;
    for (const doc of [doc3, swagger2]) {
      for (const path of paths(doc)) {
        for (const value of hostile) {
          const copy = structuredClone(doc) as Record<string, unknown>;
          let o = copy;
          for (const k of path.slice(0, -1)) o = o[k] as Record<string, unknown>;
          o[path.at(-1) as string] = value;
          let api: ReturnType<typeof openapiToTools> | undefined;
          try {
            api = openapiToTools(copy);
          } catch (err) {
            // a $ref the document cannot resolve outside any path, e.g. in the security schemes, is the one refusal
            expect({ path, value, message: (err as Error).message }).toEqual({ path, value, message: expect.stringMatching(/unresolved \$ref/) });
            continue;
          }
          cases++;
          for (const t of api.tools) {
            expect(typeof t.name).toBe('string');
            expect(t.inputSchema.type).toBe('object');
            expect(() => JSON.stringify(t.inputSchema)).not.toThrow();
          }
          for (const s of api.skipped) expect(typeof s.reason).toBe('string');
        }
      }
    }
    expect(cases).toBeGreaterThan(300);
    // one operation that cannot be read does not take the others with it
    const broken = structuredClone(doc3) as { paths: Record<string, unknown> };
    broken.paths['/c'] = { get: { parameters: [{ $ref: '#/components/parameters/missing' }] } };
    const api = openapiToTools(broken);
    expect(api.tools.map((t) => t.name).sort()).toEqual(['getB', 'postA']);
    expect(api.skipped).toEqual([{ method: 'GET', path: '/c', reason: 'unresolved $ref #/components/parameters/missing' }]);
  });

  test('schemas that share schemas 22 levels deep (2.8 KB, 4 million paths inlined): converted at once, the rest a placeholder naming its $ref', () => {
    // S0 → S1 twice → S2 twice … : inlining every $ref copies S22 2^22 times (the converter ran out of time and memory)
    const schemas: Record<string, unknown> = { S22: { type: 'string' } };
    for (let i = 0; i < 22; i++) schemas[`S${i}`] = { type: 'object', properties: { a: { $ref: `#/components/schemas/S${i + 1}` }, b: { $ref: `#/components/schemas/S${i + 1}` } } };
    const deep = { $ref: '#/components/schemas/S0' };
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'http://h' }],
      components: { schemas },
      paths: {
        '/x': { post: { operationId: 'postX', requestBody: { content: { 'application/json': { schema: deep } } } } },
        // responses are not inputs: neither their size nor a $ref that points nowhere holds an operation back
        '/y': { get: { operationId: 'getY', responses: { 200: { description: 'ok', content: { 'application/json': { schema: deep } } }, 404: { $ref: '#/nope' } } } },
      },
    };
    const t0 = Date.now();
    const api = openapiToTools(doc);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(api.skipped).toEqual([]);
    expect(api.tools.map((t) => t.name)).toEqual(['postX', 'getY']);
    const schema = JSON.stringify(api.tools[0]?.inputSchema);
    expect(schema.length).toBeLessThan(5_000_000);
    expect(schema).toContain('"a":{"type":"object","properties":{"a":{"type":"object"'); // the first levels are inlined
    expect(schema).toMatch(/"\(not expanded: #\/components\/schemas\/S\d+; the operation's schemas are too large to inline\)"/);
  });

  test('names that are properties of every object (__proto__, constructor, toString) are names like any other', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'http://h' }],
      paths: {
        '/q': { get: { operationId: 'getQ', parameters: [{ name: 'constructor', in: 'query', schema: { type: 'string' } }, { name: 'toString', in: 'header', schema: { type: 'string' } }] } },
        '/b': {
          post: {
            operationId: 'postB',
            requestBody: { content: { 'application/json': { schema: { type: 'object', required: ['__proto__'], properties: JSON.parse('{"__proto__":{"type":"string"},"constructor":{"type":"integer"},"valueOf":{"type":"boolean"}}') } } } },
          },
        },
      },
    };
    const api = openapiToTools(doc);
    const q = api.tools.find((t) => t.name === 'getQ');
    // not renamed to query_constructor / header_toString as if they clashed with another parameter
    expect(Object.keys(q?.inputSchema.properties as object)).toEqual(['constructor', 'toString']);
    expect(q?.arguments.map((a) => a.property)).toEqual(['constructor', 'toString']);
    const b = api.tools.find((t) => t.name === 'postB');
    // flattened (no clash with a parameter), every field kept, __proto__ too
    const props = b?.inputSchema.properties as Record<string, unknown>;
    expect(Object.keys(props)).toEqual(['__proto__', 'constructor', 'valueOf']);
    expect(Object.getOwnPropertyDescriptor(props, '__proto__')?.value).toEqual({ type: 'string' });
    expect(b?.inputSchema.required).toEqual(['__proto__']);
    const req = buildRequest({ tool: b as never, target: { baseUrl: 'http://h', headers: {} } }, JSON.parse('{"__proto__":"p","constructor":1,"valueOf":true}'));
    expect(req.init.body).toBe('{"__proto__":"p","constructor":1,"valueOf":true}');
  });

  test('path parameters: one the document forgot to declare is still an argument; an empty value is refused, not sent to the collection', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'http://h' }],
      paths: {
        '/items/{id}': { get: { operationId: 'getItem', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }] } },
        '/groups/{group}/items': { get: { operationId: 'listGroupItems' } },
      },
    };
    const api = openapiToTools(doc);
    const undeclared = api.tools.find((t) => t.name === 'listGroupItems');
    expect(undeclared?.inputSchema.properties).toEqual({ group: { type: 'string', minLength: 1, description: 'path parameter (not declared in the document)' } });
    expect(undeclared?.inputSchema.required).toEqual(['group']);
    expect(buildRequest({ tool: undeclared as never, target: { baseUrl: 'http://h', headers: {} } }, { group: 'a b' }).url).toBe('http://h/groups/a%20b/items');
    const item = api.tools.find((t) => t.name === 'getItem');
    // '' would have called /items/ (the collection), not an item
    expect(() => buildRequest({ tool: item as never, target: { baseUrl: 'http://h', headers: {} } }, { id: '' })).toThrow('path parameter id must not be empty');
    expect(buildRequest({ tool: item as never, target: { baseUrl: 'http://h', headers: {} } }, { id: 'x' }).url).toBe('http://h/items/x');
  });

  test("a parameter's or body field's schema is carried whole (`not` too: the NUL ban of Armada's path parameters; a `then`'s required); a flattened body that takes no other fields says so on the tool's inputs", () => {
    const nulFree = { type: 'string', minLength: 1, maxLength: 200, not: { pattern: '\\u0000' } };
    // a `then` requires a property of the object it applies to, which its own `properties` need not list (it was dropped)
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a thenable
    const item = { type: 'object', properties: { type: { enum: ['a', 'b'] }, a: { type: 'string' } }, allOf: [{ if: { properties: { type: { const: 'a' } } }, then: { required: ['a'], properties: { b: false } } }] };
    const doc = {
      openapi: '3.1.0',
      info: { title: 'T', version: '1' },
      paths: {
        '/items/{id}': {
          patch: {
            operationId: 'updateItem',
            parameters: [
              { name: 'id', in: 'path', required: true, schema: nulFree },
              { name: 'tag', in: 'query', schema: { type: 'string', not: { enum: ['all'] }, allOf: [{ pattern: '^[a-z]+$' }] } },
            ],
            requestBody: {
              content: {
                'application/json': {
                  schema: { type: 'object', additionalProperties: false, required: ['made'], properties: { note: { type: 'string', not: { const: '' } }, item, made: { type: 'string', readOnly: true } } },
                },
              },
            },
          },
          put: { operationId: 'replaceItem', parameters: [{ name: 'id', in: 'path', required: true, schema: nulFree }], requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { note: { type: 'string' } } } } } } },
        },
      },
    };
    const { tools } = openapiToTools(doc);
    const [update, replace] = [tools.find((t) => t.name === 'updateItem'), tools.find((t) => t.name === 'replaceItem')];
    expect(update?.inputSchema).toEqual({
      type: 'object',
      // a readOnly field is no input, and no longer required
      properties: { id: nulFree, tag: { type: 'string', not: { enum: ['all'] }, allOf: [{ pattern: '^[a-z]+$' }] }, note: { type: 'string', not: { const: '' } }, item },
      required: ['id'],
      additionalProperties: false,
    });
    // a body that takes other fields (JSON Schema's default): the tool's inputs say nothing more
    expect(replace?.inputSchema).toEqual({ type: 'object', properties: { id: nulFree, note: { type: 'string' } }, required: ['id'] });
  });

  test('path and header values that cannot be sent as given are refused: "."/".." made of parameters side by side, a boolean the schema does not allow, a header character past U+00FF', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      paths: {
        '/files/{a}{b}': { get: { operationId: 'getFile', parameters: [{ name: 'X-Note', in: 'header', schema: { type: 'string' } }] } },
        '/flags/{on}': { get: { operationId: 'getFlag', parameters: [{ name: 'on', in: 'path', required: true, schema: { type: 'boolean' } }] } },
      },
    };
    const api = openapiToTools(doc);
    const served = (name: string) => ({ tool: api.tools.find((t) => t.name === name) as never, target: { baseUrl: 'http://h/base', headers: {} } });
    expect(() => buildRequest(served('getFile'), { a: '.', b: '.' })).toThrow('the path /files/.. has a ".." segment: a URL drops "." and ".." path segments, so the call would go to another resource; give other path parameters');
    expect(buildRequest(served('getFile'), { a: '.', b: 'x' }).url).toBe('http://h/base/files/.x');
    expect(() => buildRequest(served('getFile'), { a: 'a', b: 'b', 'X-Note': '5 €' })).toThrow('the value of header parameter X-Note is not allowed in an HTTP header: it holds "€", a character an HTTP header cannot carry (past U+00FF)');
    // fetch refuses every control character but tab: before, only CR, LF and NUL were, and an ESC read as a service that is down
    for (const [value, code] of [['a\u001bb', '001B'], ['a\u0001', '0001'], ['\u007f', '007F']]) {
      expect(() => buildRequest(served('getFile'), { a: 'a', b: 'b', 'X-Note': value })).toThrow(`the value of header parameter X-Note is not allowed in an HTTP header: it holds the control character U+${code}; give it without it`);
    }
    expect(buildRequest(served('getFile'), { a: 'a', b: 'b', 'X-Note': 'tab\there é' }).init.headers).toMatchObject({ 'x-note': 'tab\there é' });
    expect((buildRequest(served('getFile'), { a: 'a', b: 'b', 'X-Note': 'café' }).init.headers as Record<string, string>)['x-note']).toBe('café');
    // a boolean where the schema says boolean
    expect(buildRequest(served('getFlag'), { on: true }).url).toBe('http://h/base/flags/true');
  });

  // encodeURIComponent threw its bare "URI malformed" for a path value, and a query value went out with U+FFFD
  test('a path, query, cookie or form value holding an unpaired surrogate is refused naming it; a pair is sent as UTF-8', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      paths: {
        '/items/{id}': {
          get: {
            operationId: 'getItem',
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
              { name: 'q', in: 'query', schema: { type: 'string' } },
              { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } } },
              { name: 'session', in: 'cookie', schema: { type: 'string' } },
            ],
          },
          post: {
            operationId: 'postItem',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
            requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { note: { type: 'string' } } } } } },
          },
        },
      },
    };
    const api = openapiToTools(doc);
    const served = (name: string) => ({ tool: api.tools.find((t) => t.name === name) as never, target: { baseUrl: 'http://h', headers: {} } });
    const why = 'must be well-formed Unicode: it holds an unpaired UTF-16 surrogate (U+D800–U+DFFF), which a URL cannot carry; send each astral character as a pair';
    expect(() => buildRequest(served('getItem'), { id: 'a\ud800' })).toThrow(`path parameter id ${why}`);
    expect(() => buildRequest(served('getItem'), { id: 'x', q: '\udfff' })).toThrow(`query parameter q ${why}`);
    expect(() => buildRequest(served('getItem'), { id: 'x', tags: ['ok', '\ud83d'] })).toThrow(`query parameter tags ${why}`);
    expect(() => buildRequest(served('getItem'), { id: 'x', session: '\ud800' })).toThrow(`cookie parameter session ${why}`);
    // the form's fields are arguments of their own
    expect(Object.keys(api.tools.find((t) => t.name === 'postItem')?.inputSchema.properties ?? {})).toEqual(['id', 'note']);
    expect(() => buildRequest(served('postItem'), { id: 'x', note: '\ud800' })).toThrow(`body field note ${why}`);
    expect(buildRequest(served('getItem'), { id: '\ud83d\ude00', q: '\ud83d\ude00' }).url).toBe('http://h/items/%F0%9F%98%80?q=%F0%9F%98%80');
  });

  test('a GET or HEAD with a request body (OpenAPI 3 requestBody, Swagger 2.0 in: body): no inputs for it, since fetch never sends it', async () => {
    const body = { required: true, content: { 'application/json': { schema: { type: 'object', required: ['q'], properties: { q: { type: 'string' } } } } } };
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'http://h' }],
      paths: { '/search': { get: { operationId: 'search', parameters: [{ name: 'page', in: 'query', schema: { type: 'integer' } }], requestBody: body }, head: { operationId: 'probe', requestBody: body }, post: { operationId: 'searchPost', requestBody: body } } },
    };
    const tools = openapiToTools(doc).tools;
    // before, `q` was a required input of the GET, and what a model gave for it was dropped from the request
    expect(tools.find((t) => t.name === 'search')?.inputSchema).toEqual({ type: 'object', properties: { page: { type: 'integer' } } });
    expect(tools.find((t) => t.name === 'probe')?.inputSchema).toEqual({ type: 'object', properties: {} });
    expect(tools.find((t) => t.name === 'searchPost')?.inputSchema).toMatchObject({ required: ['q'], properties: { q: { type: 'string' } } });
    const swagger = { swagger: '2.0', info: { title: 'S', version: '1' }, host: 'h', paths: { '/find': { get: { operationId: 'find', parameters: [{ name: 'body', in: 'body', required: true, schema: { type: 'object', properties: { q: { type: 'string' } } } }] } } } };
    expect(openapiToTools(swagger).tools[0]?.inputSchema).toEqual({ type: 'object', properties: {} });
  });

  test('a tool has the name --list shows whatever --include and --exclude say; names that select nothing are given back', () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'T', version: '1' },
      servers: [{ url: 'http://h' }],
      paths: { '/a': { get: { operationId: 'dup' } }, '/b': { get: { operationId: 'dup' } }, '/c': { get: { operationId: 'other' } } },
    };
    expect(openapiToTools(doc).tools.map((t) => `${t.name} ${t.path}`)).toEqual(['dup /a', 'dup_2 /b', 'other /c']);
    // before, /b was named `dup` once /a was not served, so `--include dup_2` served nothing
    const second = openapiToTools(doc, { include: ['dup_2', 'typo'], exclude: ['nothing', 'other'] });
    expect(second.tools.map((t) => `${t.name} ${t.path}`)).toEqual(['dup_2 /b']);
    expect(second.unmatched).toEqual({ include: ['typo'], exclude: ['nothing'] });
    expect(openapiToTools(doc, { include: ['dup'] }).tools.map((t) => `${t.name} ${t.path}`)).toEqual(['dup /a', 'dup_2 /b']);
    expect(openapiToTools(doc, { exclude: ['dup'] }).unmatched).toEqual({ include: [], exclude: [] });
  });

  test('curation renames, omits properties and skips operations the document lacks', () => {
    const doc = {
      openapi: '3.1.0',
      info: { title: 'A', version: '1' },
      paths: { '/api/attempts/{attemptId}/logs': { get: { operationId: 'x', parameters: [{ name: 'attemptId', in: 'path', required: true, schema: { type: 'string' } }, { name: 'follow', in: 'query', schema: { type: 'boolean' } }], responses: {} } } },
    };
    const tools = curate(openapiToTools(doc).tools, [
      { tool: 'get_attempt_logs', method: 'GET', path: '/api/attempts/{id}/logs', omit: ['follow'] },
      { tool: 'absent', method: 'POST', path: '/api/nothing' },
    ]);
    expect(tools.map((t) => t.name)).toEqual(['get_attempt_logs']);
    expect(Object.keys(tools[0]?.inputSchema.properties as object)).toEqual(['attemptId']);
    expect(tools[0]?.arguments.map((a) => a.property)).toEqual(['attemptId']);
  });

  test('responses are text, truncated with a note past the limit', async () => {
    expect(truncate('abcdef', 10)).toBe('abcdef');
    expect(truncate('abcdef', 3)).toBe('abc\n\n[truncated: showing the first 3 of 6 characters]');
    // never half an emoji (a lone surrogate): the cut is one character earlier
    const cut = truncate('ab😀cd', 3);
    expect(cut).toBe('ab\n\n[truncated: showing the first 2 of 6 characters]');
    expect((cut as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
    expect(truncate('ab😀cd', 4)).toBe('ab😀\n\n[truncated: showing the first 4 of 6 characters]');
    const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: 'y'.repeat(300) })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const tool = openapiToTools({ openapi: '3.0.0', info: { title: 'x', version: '1' }, paths: { '/x': { get: { operationId: 'x', responses: {} } } } }).tools[0];
      const r = await callTool({ tool: tool as never, target: { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, headers: {} } }, {}, { maxResponseChars: 100 });
      expect(r.isError).toBe(false);
      expect(r.text.startsWith('HTTP 200')).toBe(true);
      expect(r.text).toMatch(/\[truncated: showing the first 100 of \d+ characters\]$/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
