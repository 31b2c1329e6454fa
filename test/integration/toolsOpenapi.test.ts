/**
 * `armada tools openapi` end to end: the real CLI as an MCP stdio server over a petstore-like document served by a
 * local HTTP server, driven by the MCP SDK's client; the local server records what the tool calls sent.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ARMADA_BIN as BIN } from '../support/armadaProcess';


const petstore = {
  openapi: '3.0.3',
  info: { title: 'Petstore', version: '1.0.0' },
  // deliberately wrong: --base-url must win
  servers: [{ url: 'http://127.0.0.1:9/v0' }],
  components: {
    securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
    parameters: { PetId: { name: 'petId', in: 'path', required: true, schema: { type: 'integer' } } },
    schemas: {
      NewPet: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, tag: { type: 'string', nullable: true }, owner: { $ref: '#/components/schemas/Owner' } } },
      Owner: { type: 'object', properties: { email: { type: 'string' } } },
      Pet: { allOf: [{ $ref: '#/components/schemas/NewPet' }, { type: 'object', properties: { id: { type: 'integer', readOnly: true } } }] },
    },
  },
  security: [{ key: [] }],
  paths: {
    '/pets': {
      get: {
        operationId: 'listPets',
        summary: 'List all pets',
        parameters: [
          { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } },
          { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } } },
        ],
        responses: { 200: { description: 'pets', content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Pet' } } } } } },
      },
      post: {
        operationId: 'createPet',
        summary: 'Create a pet',
        description: 'Adds a pet to the store.',
        parameters: [{ name: 'X-Request-Source', in: 'header', schema: { type: 'string' } }],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPet' } } } },
        responses: { 201: { description: 'created' } },
      },
    },
    '/pets/{petId}': {
      parameters: [{ $ref: '#/components/parameters/PetId' }],
      get: { operationId: 'showPetById', responses: { 200: { description: 'a pet' } } },
      delete: { operationId: 'deletePet', responses: { 204: { description: 'gone' } } },
    },
  },
};

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let server: http.Server;
let base: string;
const received: Received[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      if (req.url === '/openapi.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(petstore));
        return;
      }
      if (req.url === '/huge.json') {
        // a valid document after 70 MiB of white space
        res.writeHead(200, { 'content-type': 'application/json' });
        const block = Buffer.alloc(1024 * 1024, ' ');
        let left = 70;
        const write = () => {
          while (left > 0) {
            left--;
            if (!res.write(block)) return void res.once('drain', write);
          }
          res.end(JSON.stringify(petstore));
        };
        write();
        return;
      }
      if (req.url === '/query-key.json') {
        const keyInQuery = { ...petstore, components: { ...petstore.components, securitySchemes: { key: { type: 'apiKey', in: 'query', name: 'api_key' } } } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(keyInQuery));
        return;
      }
      if (req.url === '/missing.json') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
        return;
      }
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.method === 'POST') res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 7, ...JSON.parse(body || '{}') }));
      else if (req.url?.startsWith('/v1/pets/404')) res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no such pet"}');
      else if (req.url?.startsWith('/v1/pets/1')) res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(5000));
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([{ id: 1, name: 'Rex' }]));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

async function connect(args: string[]): Promise<{ client: Client; stderr: () => string; pid: number | null }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'tools', 'openapi', ...args], env: { ...process.env } as Record<string, string>, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (c) => {
    stderr += c;
  });
  const client = new Client({ name: 'armada-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr, pid: transport.pid };
}

/** `armada tools openapi <args> --list`, asynchronously (the documents are served by this process). */
function listRun(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { execFile } = require('node:child_process') as typeof import('node:child_process');
  return new Promise((resolve) =>
    execFile(process.execPath, [BIN, 'tools', 'openapi', ...args, '--list'], { encoding: 'utf8', timeout: 90_000 }, (e, stdout, stderr) =>
      resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const text = (r: object) => (((r as { content: { text: string }[] }).content)[0] as { text: string }).text;

/** `armada tools openapi` on the test document over stdio, and every JSON-RPC line it writes, parsed, as it comes. */
function spawnToolServer<T>() {
  const child = spawn(process.execPath, [BIN, 'tools', 'openapi', `${base}/openapi.json`, '--base-url', `${base}/v1`], { stdio: ['pipe', 'pipe', 'pipe'] });
  const answers: T[] = [];
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    for (let i = out.indexOf('\n'); i !== -1; i = out.indexOf('\n')) {
      answers.push(JSON.parse(out.slice(0, i)));
      out = out.slice(i + 1);
    }
  });
  return { child, answers };
}

describe('armada tools openapi', () => {
  test('lists the operations as tools and calls them against --base-url with the API key', async () => {
    const { client, stderr } = await connect([`${base}/openapi.json`, '--base-url', `${base}/v1`, '--api-key', 'k-123', '--header', 'X-Extra: yes', '--exclude', 'deletePet', '--max-response-chars', '1000']);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['createPet', 'listPets', 'showPetById']);
      const create = tools.find((t) => t.name === 'createPet');
      // body fields flattened next to the header parameter; $ref resolved
      expect(create?.inputSchema).toMatchObject({
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string' }, tag: { type: ['string', 'null'] }, owner: { type: 'object', properties: { email: { type: 'string' } } }, 'X-Request-Source': { type: 'string' } },
      });
      expect(tools.find((t) => t.name === 'showPetById')?.inputSchema).toMatchObject({ required: ['petId'], properties: { petId: { type: 'integer' } } });

      received.length = 0;
      const created = await client.callTool({ name: 'createPet', arguments: { name: 'Rex', tag: 'dog', owner: { email: 'a@b.c' }, 'X-Request-Source': 'mcp' } });
      expect(created.isError).toBeFalsy();
      expect(text(created)).toContain('HTTP 201');
      expect(JSON.parse(text(created).slice(text(created).indexOf('{')))).toEqual({ id: 7, name: 'Rex', tag: 'dog', owner: { email: 'a@b.c' } });
      expect(received).toHaveLength(1);
      const post = received[0] as Received;
      expect(post.method).toBe('POST');
      expect(post.url).toBe('/v1/pets');
      expect(JSON.parse(post.body)).toEqual({ name: 'Rex', tag: 'dog', owner: { email: 'a@b.c' } });
      expect(post.headers['content-type']).toMatch(/application\/json/);
      expect(post.headers['x-api-key']).toBe('k-123');
      expect(post.headers['x-extra']).toBe('yes');
      expect(post.headers['x-request-source']).toBe('mcp');

      received.length = 0;
      const listed = await client.callTool({ name: 'listPets', arguments: { limit: 5, tags: ['a', 'b c'] } });
      expect(text(listed)).toContain('"name": "Rex"');
      expect(received[0]).toMatchObject({ method: 'GET', url: '/v1/pets?limit=5&tags=a&tags=b+c', body: '' });
      expect(received[0]?.headers['x-api-key']).toBe('k-123');

      // path parameter, a long text response truncated with a note
      const long = await client.callTool({ name: 'showPetById', arguments: { petId: 1 } });
      expect(received.at(-1)).toMatchObject({ method: 'GET', url: '/v1/pets/1' });
      expect(text(long)).toMatch(/\[truncated: showing the first 1000 of 50\d\d characters\]$/);
      // HTTP errors come back as tool errors carrying the status and body
      const missing = await client.callTool({ name: 'showPetById', arguments: { petId: 404 } });
      expect(missing.isError).toBe(true);
      expect(text(missing)).toContain('HTTP 404');
      expect(text(missing)).toContain('no such pet');
      // tools are described by summary + description
      expect(tools.find((t) => t.name === 'createPet')?.description).toBe('Create a pet\n\nAdds a pet to the store.');
      // an unknown (here: excluded) tool is a JSON-RPC error -32602, not a tool result
      const unknown = await client.callTool({ name: 'deletePet', arguments: { petId: 3 } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(unknown).toBeInstanceOf(McpError);
      expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);
      expect((unknown as McpError).code).toBe(-32602);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nserver stderr:\n${stderr()}`);
    } finally {
      await client.close();
    }
  }, 90_000);

  test('--list prints each tool with its operationId name and its summary + description', async () => {
    const { execFile } = require('node:child_process') as typeof import('node:child_process');
    // asynchronously: the document is served by this process
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [BIN, 'tools', 'openapi', `${base}/openapi.json`, '--list'], { encoding: 'utf8', timeout: 60_000 }, (e, so, se) => (e ? reject(new Error(`${e.message}\n${se}`)) : resolve(so))),
    );
    const listed = JSON.parse(stdout) as { name: string; description: string; method: string; path: string }[];
    expect(listed.map((t) => [t.name, t.description])).toEqual([
      ['listPets', 'List all pets'],
      ['createPet', 'Create a pet\n\nAdds a pet to the store.'],
      // no summary or description: the method and path are all there is
      ['showPetById', 'GET /pets/{petId}'],
      ['deletePet', 'DELETE /pets/{petId}'],
    ]);
  }, 60_000);

  test('--include keeps only the named operations; a file path works as the document source', async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const os = require('node:os') as typeof import('node:os');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-openapi-'));
    const file = path.join(dir, 'petstore.yaml');
    fs.writeFileSync(file, (require('yaml') as typeof import('yaml')).stringify({ ...petstore, servers: [{ url: `${base}/v1` }] }));
    const { client } = await connect([file, '--include', 'listPets,deletePet']);
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['deletePet', 'listPets']);
      received.length = 0;
      await client.callTool({ name: 'deletePet', arguments: { petId: 3 } });
      // the document's own server is used without --base-url; no API key was given
      expect(received[0]).toMatchObject({ method: 'DELETE', url: '/v1/pets/3' });
      expect(received[0]?.headers['x-api-key']).toBeUndefined();
    } finally {
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  test('a path parameter ".", ".." or not a string or number, a header value with a line break: a tool error saying why, and no request sent', async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const os = require('node:os') as typeof import('node:os');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-openapi-'));
    const file = path.join(dir, 'items.json');
    const items = {
      openapi: '3.0.3',
      info: { title: 'Items', version: '1' },
      servers: [{ url: `${base}/base` }],
      paths: {
        '/items/{id}': {
          get: {
            operationId: 'getItem',
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
              { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
            ],
          },
        },
      },
    };
    fs.writeFileSync(file, JSON.stringify(items));
    const { client } = await connect([file]);
    try {
      const dots = (v: string) => `path parameter id must not be "${v}": a URL drops "." and ".." path segments, so the call would go to another resource`;
      const refused: [Record<string, unknown>, string][] = [
        // were sent as GET /base/ and GET /base/items/
        [{ id: '..' }, dots('..')],
        [{ id: '.' }, dots('.')],
        // was sent as GET /base/items/null
        [{ id: null }, 'path parameter id must be a string or a number, not null'],
        [{ id: { a: 1 } }, 'path parameter id must be a string or a number, not an object'],
        [{ id: true }, 'path parameter id must be a string or a number, not a boolean'],
        // was "… failed: …; check that the service at … is running"
        [{ id: 'x', 'X-Trace': 'a\r\nX-Injected: 1' }, 'the value of header parameter X-Trace is not allowed in an HTTP header: it holds a line break or NUL (CR, LF, NUL); give it without them'],
      ];
      received.length = 0;
      for (const [args, message] of refused) {
        const r = await client.callTool({ name: 'getItem', arguments: args });
        expect({ args, isError: r.isError, text: text(r) }).toEqual({ args, isError: true, text: message });
      }
      expect(received).toEqual([]);
      // values that only look like dot segments are sent, encoded, to the item
      for (const id of ['%2e%2e', '..x', '.hidden', 7]) {
        const r = await client.callTool({ name: 'getItem', arguments: { id } });
        expect(r.isError).toBeFalsy();
      }
      expect(received.map((r) => r.url)).toEqual(['/base/items/%252e%252e', '/base/items/..x', '/base/items/.hidden', '/base/items/7']);
    } finally {
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  test('an upstream that is down or cuts its answer: a tool error at once saying why, without the query key; no hang', async () => {
    const net = require('node:net') as typeof import('node:net');
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const down = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    // answers the head and part of the body, then closes the connection
    const cut = net.createServer((sock) =>
      sock.once('data', () => {
        sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"partial":');
        setTimeout(() => sock.destroy(), 50);
      }),
    );
    await new Promise<void>((r) => cut.listen(0, '127.0.0.1', r));
    const cutUrl = `http://127.0.0.1:${(cut.address() as AddressInfo).port}`;
    const { client, stderr } = await connect([`${base}/query-key.json`, '--base-url', down, '--api-key', 'sk-query-secret']);
    const second = await connect([`${base}/query-key.json`, '--base-url', cutUrl, '--api-key', 'sk-query-secret']);
    try {
      const t0 = Date.now();
      const r = await client.callTool({ name: 'listPets', arguments: { limit: 5 } });
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(r.isError).toBe(true);
      expect(text(r)).toBe(`GET ${down}/pets?limit=5 failed: connection refused (ECONNREFUSED); check that the service at ${down} is running`);
      const c = await second.client.callTool({ name: 'showPetById', arguments: { petId: 1 } });
      expect(c.isError).toBe(true);
      expect(text(c)).toMatch(new RegExp(`^GET ${cutUrl}/pets/1 answered HTTP 200, then its answer was cut off: .*\\((UND_ERR_SOCKET|ECONNRESET)\\); try again$`));
      for (const t of [text(r), text(c), stderr(), second.stderr()]) expect(t).not.toContain('sk-query-secret');
    } finally {
      await client.close();
      await second.client.close();
      await new Promise((r) => cut.close(r));
    }
  }, 90_000);

  test('an upstream that echoes the key (body, reflected headers, escaped, base64, status text, at the cut) never shows it to the client', async () => {
    const KEY = 'sk-echo-secret-0123456789';
    const TOKEN = 'tok-echo-bearer-987654';
    const QUERY_KEY = 'qk-echo-secret-555555';
    const escaped = (s: string) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    const echo = http.createServer((req, res) => {
      const sent = [req.headers['x-api-key'], req.headers.authorization, new URL(req.url ?? '/', 'http://x').searchParams.get('api_key')].filter((v): v is string => typeof v === 'string');
      const all = sent.join(' ');
      if (req.url?.startsWith('/v1/pets/404')) {
        // the key in the status text, and in the body as JSON escapes a parser turns back into the key
        res.writeHead(401, `Invalid key ${sent[0] ?? ''}`, { 'content-type': 'application/json' }).end(`{"detail":"${escaped(`invalid key ${all}`)}"}`);
      } else if (req.url?.startsWith('/v1/pets/1')) {
        // a long text with the key where --max-response-chars cuts it
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`${'x'.repeat(985)} ${all} ${'y'.repeat(100)}`);
      } else if (req.method === 'POST') {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(`refused: ${Buffer.from(all).toString('base64')} / ${encodeURIComponent(all)}`);
      } else {
        res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `invalid key ${all}`, headers: req.headers, url: req.url }));
      }
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const echoBase = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
    const inHeader = await connect([`${base}/openapi.json`, '--base-url', `${echoBase}/v1`, '--api-key', KEY, '--header', `Authorization: Bearer ${TOKEN}`, '--max-response-chars', '1000']);
    // the key from OPENAPI_API_KEY, sent in the query
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'tools', 'openapi', `${base}/query-key.json`, '--base-url', `${echoBase}/v1`],
      env: { ...process.env, OPENAPI_API_KEY: QUERY_KEY } as Record<string, string>,
      stderr: 'pipe',
    });
    let queryStderr = '';
    transport.stderr?.on('data', (c) => {
      queryStderr += c;
    });
    const inQuery = new Client({ name: 'armada-test', version: '1.0.0' });
    await inQuery.connect(transport);
    try {
      const answers: string[] = [];
      for (const client of [inHeader.client, inQuery]) {
        for (const [name, args] of [
          ['listPets', { limit: 1 }],
          ['showPetById', { petId: 404 }],
          ['showPetById', { petId: 1 }],
          ['createPet', { name: 'Rex' }],
        ] as const) {
          const r = await client.callTool({ name, arguments: args });
          expect([name, r.isError]).toEqual([name, name !== 'showPetById' || (args as { petId: number }).petId !== 1]);
          answers.push(JSON.stringify(r));
        }
      }
      // nor its command line, which every user of the host reads in ps (the process title shows the key as ***)
      const cmdline = fs.readFileSync(`/proc/${inHeader.pid}/cmdline`, 'utf8');
      expect(cmdline).toMatch(/tools openapi .* --api-key \*\*\* --header Authorization: \*\*\*/);
      const everything = [...answers, inHeader.stderr(), queryStderr, cmdline].join('\n');
      for (const secret of [KEY, TOKEN, QUERY_KEY]) {
        for (const form of [secret, Buffer.from(secret).toString('base64'), encodeURIComponent(secret), secret.slice(0, 12)]) expect(everything).not.toContain(form);
      }
      // what the service said is there, the key as [key]
      expect(answers[0]).toContain('invalid key [key] [key]');
      expect(answers[1]).toContain('HTTP 401 Invalid key [key]');
      expect(answers[4]).toContain('invalid key [key]');
      expect(answers[4]).toContain('api_key=[key]');
    } finally {
      await inHeader.client.close();
      await inQuery.close();
      await new Promise((r) => echo.close(r));
    }
  }, 90_000);

  test('a document that cannot be loaded: one line naming it, why, and what to do; exit 1', async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const os = require('node:os') as typeof import('node:os');
    const net = require('node:net') as typeof import('node:net');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-openapi-'));
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const nobody = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/openapi.json`;
    await new Promise((r) => closed.close(r));
    try {
      fs.writeFileSync(path.join(dir, 'bad.json'), '{"openapi": "3.0.0", "paths": {\n');
      fs.writeFileSync(path.join(dir, 'bad.yaml'), 'openapi: 3.0.0\npaths: [\n');
      const cases: [string, string][] = [
        [nobody, `cannot fetch the OpenAPI document ${nobody}: connection refused (ECONNREFUSED); check the URL and that its server is running`],
        [`${base}/missing.json`, `the OpenAPI document ${base}/missing.json answered HTTP 404; check the URL (and --header, for a document that needs a key)`],
        [`${base}/huge.json`, `the OpenAPI document ${base}/huge.json is larger than 64 MiB; Armada reads at most that much of a document`],
        [path.join(dir, 'bad.json'), `${path.join(dir, 'bad.json')} is not valid JSON (Expected property name or '}' in JSON at position 32); fix the document`],
        [path.join(dir, 'bad.yaml'), `${path.join(dir, 'bad.yaml')} is not valid YAML (Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1); fix the document`],
        [path.join(dir, 'nowhere.json'), `cannot read ${path.join(dir, 'nowhere.json')}: no such file; give the path of the document's file or its http(s) URL`],
        // a FIFO blocked the read until a writer came (forever)
        [path.join(dir, 'fifo.json'), `cannot read ${path.join(dir, 'fifo.json')}: it is a FIFO (named pipe), not a file; give the path of the document's file or its http(s) URL`],
      ];
      execFileSync('mkfifo', [path.join(dir, 'fifo.json')]);
      for (const [source, message] of cases) {
        const r = await listRun([source]);
        expect({ source, ...r }).toEqual({ source, code: 1, stdout: '', stderr: `armada tools openapi: ${message}\n` });
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  test('a server URL that is not http(s), a $ref to the whole document: the messages name what is there and the operation left out', async () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const os = require('node:os') as typeof import('node:os');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-openapi-'));
    const file = path.join(dir, 'odd.json');
    const doc = (serverUrl: string) => ({
      openapi: '3.0.3',
      info: { title: 'Odd', version: '1' },
      servers: [{ url: serverUrl }],
      paths: {
        '/a': { get: { operationId: 'getA', parameters: [{ $ref: '#' }] }, post: { operationId: 'postA' } },
        '/b': { get: { operationId: 'getB', parameters: [{ $ref: 'other.yaml#/p' }] } },
        '/c': { get: { operationId: 'getC' } },
      },
    });
    const leftOut = [
      // was blamed on /b's external $ref, and named "the operations of /a"
      'armada tools openapi: left out GET /a, which the document describes in a shape that cannot be read ($ref "#" points to the whole document, not to a part of it); fix it there to serve it',
      'armada tools openapi: left out GET /b, which the document describes in a shape that cannot be read (only local $refs are supported, not other.yaml#/p); fix it there to serve it',
    ];
    try {
      fs.writeFileSync(file, JSON.stringify(doc('file:///etc')));
      // was "the document names no server URL"
      expect(await listRun([file])).toEqual({ code: 2, stdout: '', stderr: [...leftOut, "armada tools openapi: the document's server URL file:///etc is not an http(s) URL; give --base-url", ''].join('\n') });
      fs.writeFileSync(file, JSON.stringify(doc('/v1')));
      expect((await listRun([file])).stderr.split('\n').at(-2)).toBe("armada tools openapi: the document's server URL /v1 is relative, and the document was read from a file; give --base-url");
      const served = await listRun([file, '--base-url', 'http://127.0.0.1:9']);
      expect(served.code).toBe(0);
      // the other operation of /a is still served
      expect((JSON.parse(served.stdout) as { name: string }[]).map((t) => t.name)).toEqual(['postA', 'getC']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  test('an --include or --exclude name that selects no operation is one line on stderr each; the rest is served', async () => {
    const r = await listRun([`${base}/openapi.json`, '--include', 'listPets,lsitPets', '--exclude', 'nothing']);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { name: string }[]).map((t) => t.name)).toEqual(['listPets']);
    expect(r.stderr).toBe(
      'armada tools openapi: --include lsitPets names no operation of the document (neither an operationId nor a tool name that --list shows)\n' +
        'armada tools openapi: --exclude nothing names no operation of the document (neither an operationId nor a tool name that --list shows)\n',
    );
  }, 60_000);

  test('a --header value HTTP cannot carry (a control character) is a usage error naming the header, never showing the value', async () => {
    const r = await listRun([`${base}/openapi.json`, '--header', 'X-API-Key: sec\u0001ret']);
    // before: "cannot fetch the OpenAPI document …: invalid x-api-key header (UND_ERR_INVALID_ARG); check the URL and that its server is running"
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toBe('armada tools openapi: --header X-API-Key: its value is not allowed in an HTTP header: it holds the control character U+0001; give it without it; run armada tools --help\n');
  }, 60_000);

  test('an answer that redirects to another origin is a tool error naming the status and that origin, nothing sent there; within the origin it is followed with the key', async () => {
    // the tools' server answers a call with a redirect within itself, or to the petstore by another name (another origin)
    const movedSeen: { url: string; key: string | undefined }[] = [];
    const moved = http.createServer((req, res) => {
      movedSeen.push({ url: req.url ?? '', key: req.headers['x-api-key'] as string | undefined });
      if (req.url === '/pets?limit=2') return void res.writeHead(302, { location: '/here/pets?limit=2' }).end();
      if (req.url === '/here/pets?limit=2') return void res.writeHead(200, { 'content-type': 'application/json' }).end('[{"id":2,"name":"Moved"}]');
      res.writeHead(302, { location: `http://user:pw@localhost:${new URL(base).port}/v1${req.url}` }).end();
    });
    await new Promise<void>((r) => moved.listen(0, '127.0.0.1', r));
    const movedUrl = `http://127.0.0.1:${(moved.address() as AddressInfo).port}`;
    const { client } = await connect([`${base}/openapi.json`, '--base-url', movedUrl, '--api-key', 'k-secret', '--header', 'X-Extra: also-secret']);
    try {
      received.length = 0;
      const within = await client.callTool({ name: 'listPets', arguments: { limit: 2 } });
      expect(text(within)).toContain('"name": "Moved"');
      expect(movedSeen).toEqual([
        { url: '/pets?limit=2', key: 'k-secret' },
        { url: '/here/pets?limit=2', key: 'k-secret' },
      ]);
      const away = await client.callTool({ name: 'listPets', arguments: { limit: 3 } });
      expect(away.isError).toBe(true);
      // before, followed (from session 51 without the key): the answer of whatever the Location named went to the model
      expect(text(away)).toBe(
        `GET ${movedUrl}/pets?limit=3 answered HTTP 302, a redirect to another origin (http://localhost:${new URL(base).port}), which is not followed: the tools call their service's own origin (${movedUrl}) only; if the service has moved there, give the tools its new URL`,
      );
      expect(received).toHaveLength(0);
    } finally {
      await client.close();
      await new Promise((r) => moved.close(r));
    }
  }, 60_000);

  test('a --base-url (or OPENAPI_BASE_URL) fetch cannot send to is refused at start, one line, exit 2, the password never shown', async () => {
    for (const value of ['not a url', 'ftp://127.0.0.1/v1']) {
      const r = await listRun([`${base}/openapi.json`, '--base-url', value]);
      expect(r).toMatchObject({ code: 2, stdout: '', stderr: `armada tools: --base-url "${value}" is not an http(s) URL; give the service's URL, such as http://127.0.0.1:8080/v1\n` });
    }
    // before, taken as given: every call failed, and its tool error showed the URL, password included, to the model
    const r = await listRun([`${base}/openapi.json`, '--base-url', `http://me:s3cret@127.0.0.1:${new URL(base).port}/v1`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^armada tools: --base-url holds a user name or password, which fetch does not send from a URL/);
    expect(r.stderr).not.toContain('s3cret');
    const { execFile } = require('node:child_process') as typeof import('node:child_process');
    const fromEnv = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, [BIN, 'tools', 'openapi', `${base}/openapi.json`, '--list'], { encoding: 'utf8', env: { ...process.env, OPENAPI_BASE_URL: 'localhost:8080' } }, (e, _so, se) =>
        resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stderr: se }),
      ),
    );
    expect(fromEnv).toEqual({ code: 2, stderr: `armada tools: OPENAPI_BASE_URL "localhost:8080" is not an http(s) URL; give the service's URL, such as http://127.0.0.1:8080/v1\n` });
  }, 60_000);

  test('a document URL or an upstream that never answers ends with --timeout as the message, not a crash or a hang', async () => {
    // accepts connections and says nothing: the document fetch times out with a TimeoutError (numeric code 23)
    const net = require('node:net') as typeof import('node:net');
    const sockets: import('node:net').Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const { execFile } = require('node:child_process') as typeof import('node:child_process');
    const cli = (args: string[]) =>
      new Promise<{ code: number; stderr: string }>((resolve) =>
        execFile(process.execPath, [BIN, 'tools', 'openapi', ...args], { encoding: 'utf8', timeout: 90_000 }, (e, _so, se) => resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, stderr: se })),
      );
    try {
      const t0 = Date.now();
      const r = await cli([`${silentUrl}/openapi.json`, '--list', '--timeout', '2']);
      expect(Date.now() - t0).toBeLessThan(30_000); // the 2 s given, not the 30 s default
      expect(r.code).toBe(1);
      expect(r.stderr).not.toContain('is not a function');
      expect(r.stderr).toMatch(/timed out after 2000 ms/);
      // the same bound for each call's answer
      const { client } = await connect([`${base}/openapi.json`, '--base-url', silentUrl, '--timeout', '1.5']);
      try {
        const c = await client.callTool({ name: 'listPets', arguments: {} });
        expect(c.isError).toBe(true);
        expect(text(c)).toMatch(/failed: no answer within 1\.5 s; the service may be overloaded or stuck$/);
      } finally {
        await client.close();
      }
      for (const bad of ['0', '-1', 'soon', '3601', '1e3', '']) {
        const b = await cli([`${base}/openapi.json`, '--list', `--timeout=${bad}`]);
        expect([bad, b.code, b.stderr]).toEqual([bad, 2, 'armada tools: --timeout must be a number of seconds above 0 and at most 3600, such as 30 or 2.5\n']);
      }
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  }, 120_000);
  test('malformed JSON-RPC lines are answered with JSON-RPC 2.0 errors, not dropped; the server goes on answering', async () => {
    const { child, answers } = spawnToolServer<{ id?: unknown; error?: { code: number; message: string }; result?: unknown }>();
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '1.0', id: 2, method: 'tools/list' },
      [{ jsonrpc: '2.0', id: 3, method: 'tools/list' }],
      '{not json',
      '"a string"',
      { jsonrpc: '2.0', id: { a: 1 }, method: 'tools/list' },
      { jsonrpc: '2.0', id: 1.5, method: 'ping' },
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}', // an integer, but past what JSON.parse keeps exactly
      { jsonrpc: '2.0', id: 4, method: 'no/such/method' },
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: {} },
      { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'listPets', arguments: 'not an object' } },
      { jsonrpc: '2.0', method: 'tools/list' }, // a notification: no answer
      { jsonrpc: '2.0', id: 7, method: 'ping' },
    ];
    try {
      child.stdin.write(`${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`);
      const deadline = Date.now() + 30_000;
      while (!answers.some((a) => a.id === 7) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300)); // nothing else comes
      const code = (id: unknown) => answers.filter((a) => JSON.stringify(a.id) === JSON.stringify(id)).map((a) => a.error?.code ?? 'result');
      expect(code(1)).toEqual(['result']);
      expect(code(2)).toEqual([-32600]); // wrong jsonrpc version, answered with its id
      // a batch, a line that is not JSON, a message that is not an object, an id that is an object or a fraction: id null
      expect(code(null).sort()).toEqual([-32700, -32600, -32600, -32600, -32600, -32600].sort());
      expect(answers.filter((a) => a.error?.message.includes('"id" must be a string or an integer'))).toHaveLength(3);
      expect(answers.filter((a) => a.error?.message.includes('of at most 9007199254740991 in magnitude'))).toHaveLength(1);
      expect(answers.find((a) => a.error?.code === -32700)?.error?.message).toMatch(/^Parse error/);
      expect(code(4)).toEqual([-32601]);
      // params not those of tools/call: invalid params, not an internal error
      expect(code(5)).toEqual([-32602]);
      expect(code(6)).toEqual([-32602]);
      expect(code(7)).toEqual(['result']);
      expect(answers).toHaveLength(12);
      for (const a of answers) expect((a as { jsonrpc?: string }).jsonrpc).toBe('2.0');
    } finally {
      child.kill();
    }
  }, 60_000);

  // session 46's outside round: a misspelt argument was dropped and the call went out without it; `1e400`, which the
  // message's parser reads as Infinity, went out as null (clearing the nullable `tag`); session 47's: `1e-400`, which
  // it reads as 0, went out as 0. A number is an invalid params error (-32602) since session 47, a tool error before
  test('an argument the tool does not take is a tool error naming it, a number JSON.parse cannot read as written is -32602, and nothing is sent', async () => {
    const { child, answers } = spawnToolServer<{ id?: unknown; result?: { isError?: boolean; content: { text: string }[] }; error?: { code: number; message: string } }>();
    // written as text: a client's JSON.stringify would have sent 1e400 as null already
    const call = (id: number, args: string) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"createPet","arguments":${args}}}`;
    const lines = [
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      call(2, '{"name":"Rex","tga":"dog"}'),
      call(3, '{"name":"Rex","tag":1e400}'),
      call(4, '{"name":"Rex","owner":{"email":"a@b.c","score":-1e999}}'),
      call(5, '{"nmae":"Rex","tga":"dog"}'),
      call(6, '{"name":"Rex","owner":{"email":"a@b.c","score":1e-400}}'),
    ];
    try {
      received.length = 0;
      child.stdin.write(`${lines.join('\n')}\n`);
      const deadline = Date.now() + 30_000;
      while (answers.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const result = (id: number) => {
        const r = answers.find((a) => a.id === id)?.result;
        return [r?.isError, r?.content[0]?.text];
      };
      const takes = 'it takes X-Request-Source, name, tag, owner; nothing was sent';
      expect(result(2)).toEqual([true, `createPet has no argument "tga": ${takes}`]);
      const error = (id: number) => answers.find((a) => a.id === id)?.error;
      expect(error(3)).toEqual({ code: -32602, message: 'Invalid params of tools/call: argument tag must be a number a double can hold (at most about ±1.8e308); nothing was sent' });
      expect(error(4)).toEqual({ code: -32602, message: 'Invalid params of tools/call: argument owner.score must be a number a double can hold (at most about ±1.8e308); nothing was sent' });
      expect(error(6)).toEqual({
        code: -32602,
        message: 'Invalid params of tools/call: argument owner.score must be 0 or a number a double can hold (at least about ±4.9e-324): a smaller one would be read as 0; nothing was sent',
      });
      expect(result(5)).toEqual([true, `createPet has no arguments "nmae", "tga": ${takes}`]);
      expect(received).toEqual([]);
    } finally {
      child.kill();
    }
  }, 60_000);
});
