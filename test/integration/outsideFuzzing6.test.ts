/**
 * What session 50's outside-fuzzing round found and decided, sent to the real services over loopback (raw HTTP/1.1
 * where the bytes matter, `ws` for the sockets), each answer checked for its status and documented shape:
 * - `Expect: 100-continue`: Node sent the 100 on arrival, so a POST declaring 10 GiB was asked for its body and then
 *   refused (413), and one without the key asked for it before its 401; now the 100 goes when the body is about to
 *   be read, and a request answered before that gets its answer at once and the connection closes
 *   (docs/security.md);
 * - a WebSocket dropped for being far behind (8 MiB unread) was cut (1006, no reason); a client flooding protocol
 *   pings and reading none of the pongs was cut by ws's own guard (1006): now both are closed with 1008 and a reason
 *   the client reads if it reads again within 5 s (docs/attempts.md, "Streams");
 * - a task or template search found a title only in the Unicode form the term was typed in (`café` composed did not
 *   find `café` decomposed, as macOS input and file names give it): now the term is looked for in both forms (NFC and
 *   NFD; docs/task-service.md).
 * What held, kept here as guards: request smuggling shapes (Content-Length with Transfer-Encoding, Transfer-Encoding
 * twice or obs-folded, Content-Length twice or as a list: one 400, nothing smuggled or stored); an obs-folded header;
 * headers sent a byte at a time (the 408 in shape, others answered meanwhile); 300 connections held open; 10,000 query
 * parameters; pagination extremes on every list of the four documents (limit 0, −1, 2^53, the last offset or page:
 * an empty page with the right total); LIKE, tsquery and regular-expression metacharacters in every search, and SQL
 * and regular-expression text in sort and filter parameters; ids of other resources in every GET path; identical
 * writes at once (one wins, the rest "already exists", never a 500); messages sent to a stream that takes none; schedules at the edges (a cron string that never
 * fires, `@every 0s`, `@every 1000000000s`, `Etc/GMT+14`, unknown zones, years 0 and 10000, a leap second, February
 * 30th, an offset of +24:00, wall-clock times in a DST gap and fold: a 201 or a 400 saying why, the times as documented).
 * schemathesis in negative mode (seeds 6061, 50506, 50507, 50509; `--generation-unique-inputs`, 10–40 examples) found
 * one failure, the documented 413 of a body past 1 MiB judged "schema-violating request accepted" (its list of
 * refusals has no 413): test/contract/schemathesis.toml adds it (docs/openapi.md).
 */
import http from 'node:http';
import net from 'node:net';
import WebSocket from 'ws';
import { OPENAPI_PATHS } from '../../api/http/openapi';
import { FAR_BEHIND_REASON, PING_FLOOD_REASON } from '../../api/http/wsTextFrames';
import { makeGitRepo } from '../support/harness';
import { rawExchange } from '../support/rawExchange';
import { LIST, messageOf, SERVICES, startOutsideServices, type Json, type Service } from '../support/outsideServices';

const REQUEST_TIMEOUT_MS = 3000;
/** A flow platform whose health check is ok and whose flows are none: the sources the tests add point at it. */
let platform: http.Server;
let platformUrl = '';
beforeAll(async () => {
  platform = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(req.url?.split('?')[0]?.endsWith('/health') ? '{"status":"ok"}' : '[]');
  });
  await new Promise<void>((r) => platform.listen(0, '127.0.0.1', r));
  platformUrl = `http://127.0.0.1:${(platform.address() as net.AddressInfo).port}`;
});
const s = startOutsideServices({
  options: () => ({ env: { ARMADA_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) } }),
  close: () => new Promise((r) => platform?.close(() => r())),
});

/** Every status line in a raw answer (a smuggled second request would add one). */
const statusLines = (text: string) => text.split('\r\n').filter((l) => /^HTTP\/1\.[01] \d{3}/.test(l));

const template = (name: string) => ({ name, description: '', category: 'fuzz', tasks: [{ title: 't', description: '', order: 0 }] });

/** A write route of each service, a body it accepts, and the table a row of it lands in. */
const WRITES: Record<Service, { path: string; body: () => object; table: string }> = {
  task: { path: '/api/task-templates', body: () => template(`smuggled ${Math.random()}`), table: 'task_templates' },
  scheduler: { path: '/api/v1/sources', body: () => ({ source_type: 'flow-builder', url: `${platformUrl}/s/${Math.random()}` }), table: 'scheduler_sources' },
  agents: { path: '/api/v1/memory', body: () => ({ content: 'smuggled', agent: 'nobody' }), table: 'agent_memory' },
  traces: { path: '/api/v1/traces', body: () => ({ messageId: 'smuggled', instance: 'i', to: '+15550102000', message: 'smuggled' }), table: 'traces' },
};

describe('request smuggling shapes', () => {
  const head = (service: Service, framing: string) => `POST ${WRITES[service].path} HTTP/1.1\r\nHost: localhost\r\n${s.keyLine(service)}Content-Type: application/json\r\n${framing}\r\n`;
  const smuggled = (service: Service) => `GET ${LIST[service]} HTTP/1.1\r\nHost: localhost\r\n${s.keyLine(service)}\r\n`;

  test.each(SERVICES)('%s: Content-Length and Transfer-Encoding together, TE twice, obs-folded TE, CL twice: one 400 in shape, the connection closed, nothing smuggled or stored', async (service) => {
    const body = JSON.stringify(WRITES[service].body());
    const chunked = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const before = await s.count(WRITES[service].table);
    const shapes: [string, string][] = [
      ['CL then TE', `Content-Length: ${Buffer.byteLength(chunked)}\r\nTransfer-Encoding: chunked\r\n`],
      ['TE then CL', `Transfer-Encoding: chunked\r\nContent-Length: 4\r\n`],
      ['TE twice', `Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n`],
      ['TE obs-folded', `Transfer-Encoding:\r\n chunked\r\n`],
      ['TE with a space before the colon', `Transfer-Encoding : chunked\r\n`],
      ['CL twice, different', `Content-Length: ${Buffer.byteLength(chunked)}\r\nContent-Length: 4\r\n`],
      ['CL as a list', `Content-Length: ${Buffer.byteLength(chunked)}, 4\r\n`],
    ];
    for (const [what, framing] of shapes) {
      const res = await rawExchange(s.ports[service], `${head(service, framing)}${chunked}${smuggled(service)}`);
      const lines = statusLines(`${res.line}\r\n${res.body}`);
      expect({ what, status: res.status, answers: lines.length }).toEqual({ what, status: 400, answers: 1 });
      expect(messageOf(service, res.json)).not.toMatch(/undefined|Error:/);
    }
    expect(await s.count(WRITES[service].table)).toBe(before);
  });

  test.each(SERVICES)('%s: an obs-folded ordinary header is a 400 in shape or read as one value, never a 500', async (service) => {
    const res = await rawExchange(s.ports[service], `GET ${LIST[service]} HTTP/1.1\r\nHost: localhost\r\n${s.keyLine(service)}X-Note: first\r\n  folded\r\nConnection: close\r\n\r\n`);
    expect([200, 400]).toContain(res.status);
    if (res.status === 400) expect(messageOf(service, res.json)).toMatch(/\w/);
  });
});

describe('Expect: 100-continue', () => {
  /** The first bytes the server sends after the head of a request that expects 100-continue, and what follows. */
  const firstAnswer = (port: number, head: string) =>
    new Promise<{ first: string; all: string }>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
      let all = '';
      let first = '';
      socket.on('data', (c: Buffer) => {
        all += c.toString('latin1');
        if (!first) first = all.split('\r\n')[0] as string;
        // a final answer (not 100) in whole: stop reading
        if (!/^HTTP\/1\.1 100/.test(first) && /\r\n\r\n[\s\S]*\}$/.test(all)) socket.destroy();
        if (/^HTTP\/1\.1 100/.test(first) && /\r\n\r\n/.test(all)) socket.destroy();
      });
      socket.on('close', () => resolve({ first, all }));
      socket.on('error', reject);
    });

  test.each(SERVICES)('%s: a declared body past the limit is the 413 at once, without a 100 Continue that would ask for it', async (service) => {
    const head = `POST ${WRITES[service].path} HTTP/1.1\r\nHost: localhost\r\n${s.keyLine(service)}Content-Type: application/json\r\nContent-Length: 10737418240\r\nExpect: 100-continue\r\n\r\n`;
    const { first, all } = await firstAnswer(s.ports[service], head);
    expect(first).toBe('HTTP/1.1 413 Payload Too Large');
    expect(all).toMatch(/connection: close/i);
  });

  test.each(SERVICES.filter((x) => x !== 'task'))('%s: without the key, the 401 at once, without a 100 Continue', async (service) => {
    const head = `POST ${WRITES[service].path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`;
    const { first, all } = await firstAnswer(s.ports[service], head);
    expect(first).toBe('HTTP/1.1 401 Unauthorized');
    expect(all).toMatch(/connection: close/i);
  });

  test.each(SERVICES)('%s: a body within the limit gets its 100 Continue, then the answer once the body is sent', async (service) => {
    const body = JSON.stringify(WRITES[service].body());
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(s.ports[service], '127.0.0.1', () =>
        socket.write(`POST ${WRITES[service].path} HTTP/1.1\r\nHost: localhost\r\n${s.keyLine(service)}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`),
      );
      let all = '';
      socket.on('data', (c: Buffer) => {
        const sentBody = all.includes('100 Continue');
        all += c.toString('utf8');
        if (!sentBody && all.includes('100 Continue\r\n\r\n')) socket.write(body);
      });
      socket.on('close', () => resolve(all));
      socket.on('error', reject);
    });
    const lines = statusLines(answer);
    expect(lines[0]).toBe('HTTP/1.1 100 Continue');
    if (!/^HTTP\/1\.1 20[01] /.test(lines[1] ?? '')) throw new Error(answer);
  });
});

describe('slow and idle connections', () => {
  test.each(SERVICES)('%s: headers sent a byte at a time are cut off with a 408 in shape, and others are answered meanwhile', async (service) => {
    const request = `GET ${LIST[service]} HTTP/1.1\r\nHost: localhost\r\n${s.keyLine(service)}X-Slow: ${'s'.repeat(200)}\r\n\r\n`;
    let answered = 0;
    const slow = new Promise<string>((resolve, reject) => {
      const socket = net.connect(s.ports[service], '127.0.0.1');
      let i = 0;
      let all = '';
      const timer = setInterval(() => {
        if (i < request.length && socket.writable) socket.write(request[i++] as string);
      }, 100);
      socket.on('data', (c: Buffer) => (all += c.toString('utf8')));
      socket.on('close', () => {
        clearInterval(timer);
        resolve(all);
      });
      socket.on('error', () => undefined);
      socket.on('timeout', reject);
    });
    // while the slow one trickles in, others are answered
    for (let k = 0; k < 5; k++) {
      const ok = await rawExchange(s.ports[service], s.bodyless(service, 'GET', LIST[service]));
      if (ok.status === 200) answered++;
    }
    const text = await slow;
    expect(answered).toBe(5);
    expect(statusLines(text)[0]).toMatch(/^HTTP\/1\.1 408 /);
    const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Json;
    expect(messageOf(service, json)).toMatch(/\w/);
  }, 30_000);

  test('300 connections held open (idle, and part-way through a request) leave every service answering', async () => {
    const held: net.Socket[] = [];
    try {
      for (const service of SERVICES) {
        for (let i = 0; i < 75; i++) {
          const socket = net.connect(s.ports[service], '127.0.0.1');
          socket.on('error', () => undefined);
          if (i % 2) socket.write(`GET ${LIST[service]} HTTP/1.1\r\nHost: localhost\r\n`);
          held.push(socket);
        }
      }
      for (const service of SERVICES) {
        const ok = await rawExchange(s.ports[service], s.bodyless(service, 'GET', LIST[service]));
        expect([service, ok.status]).toEqual([service, 200]);
      }
    } finally {
      for (const h of held) h.destroy();
    }
  });
});

describe('a query string of 10,000 parameters', () => {
  /** a list that takes query parameters (one that takes none ignores any: docs/security.md) */
  const QUERIED: Record<Service, string> = { task: '/api/tasks', scheduler: '/api/v1/executions', agents: '/api/v1/tasks', traces: '/api/v1/traces' };

  test.each(SERVICES)('%s: distinct unknown names, or one name 10,000 times: a 400 of bounded size naming the parameter', async (service) => {
    const distinct = Array.from({ length: 10_000 }, (_, i) => `_${i.toString(36)}`).join('&');
    const repeated = Array.from({ length: 10_000 }, () => 'limit').join('&');
    for (const query of [distinct, repeated]) {
      const res = await rawExchange(s.ports[service], s.bodyless(service, 'GET', `${QUERIED[service]}?${query}`));
      expect([service, res.status]).toEqual([service, 400]);
      expect(messageOf(service, res.json)).toMatch(/^Request query is invalid/);
      expect(res.body.length).toBeLessThan(20_000);
    }
  });
});

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required?: boolean; schema?: { type?: string; minimum?: number; maximum?: number; default?: unknown } }[];
}

/** The GET operations of a service's document (its own document, with the key). */
async function getOperations(service: Service): Promise<Operation[]> {
  const doc = (await s.stack.app(service).inject({ method: 'GET', url: OPENAPI_PATHS[service].json, headers: s.authHeaders(service) })).json() as {
    paths: Record<string, Record<string, { parameters?: Operation['parameters'] }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).filter(([m]) => m === 'get').map(([method, op]) => ({ method, path, parameters: op.parameters ?? [] })));
}

const get = async (service: Service, url: string) => {
  const res = await s.stack.app(service).inject({ method: 'GET', url, headers: s.authHeaders(service) });
  return { status: res.statusCode, json: res.body ? (JSON.parse(res.body) as Json) : undefined, body: res.body };
};

/** Every array in an answer (the page), and its total (`pagination.total` or `total`). */
const pageOf = (json: Json | undefined) => {
  const data = (json?.data ?? json) as Json | unknown[];
  const arrays = Array.isArray(data) ? [data] : Object.values(data ?? {}).filter(Array.isArray);
  const total = ((json?.pagination as Json | undefined)?.total ?? json?.total) as number | undefined;
  return { items: arrays.reduce((n, a) => n + (a as unknown[]).length, 0), total };
};

describe('pagination at its extremes, on every list of the four documents', () => {
  beforeAll(async () => {
    // something in every list: a project and its task, a template, a source, a memory entry, traces
    const repo = makeGitRepo();
    const project = await s.stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'paged', repository: { url: repo } } });
    const projectId = project.json().data.id as string;
    await s.stack.app('task').inject({ method: 'POST', url: '/api/tasks', payload: { projectId, title: 'paged' } });
    expect((await s.stack.app('task').inject({ method: 'POST', url: '/api/task-templates', payload: template('paged') })).statusCode).toBe(200);
    for (const [service, path, body] of [
      ['scheduler', '/api/v1/sources', { source_type: 'flow-builder', url: `${platformUrl}/paged` }],
      ['agents', '/api/v1/memory', { content: 'paged entry', agent: 'nobody' }],
      ['traces', '/api/v1/traces', { messageId: 'paged-1', instance: 'i', to: '+15550102000', message: 'paged' }],
      ['traces', '/api/v1/traces', { messageId: 'paged-2', instance: 'i', to: '+15550102000', message: 'paged' }],
    ] as const) {
      const r = await s.stack.app(service).inject({ method: 'POST', url: path, headers: s.authHeaders(service), payload: body });
      if (r.statusCode !== 201) throw new Error(`${path}: ${r.statusCode} ${r.body}`);
    }
  });

  test.each(SERVICES)('%s: limit 0, −1 and 2^53 and an offset or page past its maximum are 400s naming the parameter; the last offset or page is an empty page with the same total', async (service) => {
    const required: Record<string, string> = { q: 'paged', days: '7' };
    const seen: string[] = [];
    for (const op of await getOperations(service)) {
      if (op.parameters.some((p) => p.in === 'path' || (p.in === 'query' && p.required && !(p.name in required)))) continue;
      const names = new Set(op.parameters.filter((p) => p.in === 'query').map((p) => p.name));
      const base = [...names].filter((n) => n in required).map((n) => `${n}=${required[n]}`);
      const url = (extra: string[]) => `${op.path}?${[...base, ...extra].join('&')}`.replace(/\?$/, '');
      for (const name of ['limit', 'offset', 'page'].filter((n) => names.has(n))) {
        const schema = op.parameters.find((p) => p.name === name)?.schema ?? {};
        const bad = [...(name === 'limit' ? ['0', '-1'] : ['-1']), '9007199254740992', String((schema.maximum ?? 0) + 1)];
        for (const value of bad) {
          const res = await get(service, url([`${name}=${value}`]));
          expect({ op: op.path, name, value, status: res.status }).toEqual({ op: op.path, name, value, status: 400 });
          expect(messageOf(service, res.json)).toContain(name);
        }
      }
      const last = names.has('offset') ? 'offset' : names.has('page') ? 'page' : undefined;
      if (!last) continue;
      const max = op.parameters.find((p) => p.name === last)?.schema?.maximum as number;
      const first = await get(service, url([]));
      const past = await get(service, url([`${last}=${max}`]));
      expect({ op: op.path, status: first.status }).toEqual({ op: op.path, status: 200 });
      expect({ op: op.path, status: past.status, items: pageOf(past.json).items, total: pageOf(past.json).total }).toEqual({
        op: op.path,
        status: 200,
        items: 0,
        total: pageOf(first.json).total,
      });
      seen.push(op.path);
    }
    expect(seen.length).toBeGreaterThan(0);
  });
});

describe('search terms with LIKE, tsquery and regular-expression metacharacters', () => {
  const TERMS = ['%', '_', '\\', "'", '%_%', '\\%', "a'b\\c", ':*', '!', '&|!', '(a', 'a)', '<->', '.*', '(a+)+$', '[', 'x'.repeat(200), 'é', 'e\u0301', 'ǅ', '\u{1F600}'];

  test('shared memory search: every term is a 200 with results of its own words only; % and _ match nothing but themselves', async () => {
    for (const content of ['100% done', 'snake_case name', 'back\\slash', 'plain words only']) {
      await s.stack.app('agents').inject({ method: 'POST', url: '/api/v1/memory', headers: s.authHeaders('agents'), payload: { content } });
    }
    for (const q of [...TERMS, 'x'.repeat(1000)]) {
      const res = await get('agents', `/api/v1/memory/search?q=${encodeURIComponent(q)}`);
      expect({ q, status: res.status }).toEqual({ q, status: 200 });
      const contents = ((res.json as Json).results as { content: string }[]).map((r) => r.content);
      expect({ q, plain: contents.includes('plain words only') }).toEqual({ q, plain: false });
    }
  });

  test('task and template search: LIKE metacharacters match themselves', async () => {
    const repo = makeGitRepo();
    const project = await s.stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'searched', repository: { url: repo } } });
    const projectId = project.json().data.id as string;
    for (const title of ['100% done', 'snake_case', 'back\\slash', 'plain']) {
      await s.stack.app('task').inject({ method: 'POST', url: '/api/tasks', payload: { projectId, title } });
      await s.stack.app('task').inject({ method: 'POST', url: '/api/task-templates', payload: template(`tpl ${title}`) });
    }
    for (const q of TERMS) {
      for (const url of [`/api/tasks?projectId=${projectId}&search=${encodeURIComponent(q)}`, `/api/task-templates?search=${encodeURIComponent(q)}`]) {
        const res = await get('task', url);
        expect({ url, status: res.status }).toEqual({ url, status: 200 });
        const names = ((res.json as Json).data as { title?: string; name?: string }[]).map((r) => r.title ?? r.name ?? '');
        expect({ url, names: names.filter((n) => n.endsWith('plain')) }).toEqual({ url, names: [] });
      }
    }
  });
});

describe('sort and filter parameters with SQL or regular-expression text', () => {
  test.each([
    ['task', '/api/tasks?sort=', ['title;DROP TABLE tasks', 'title desc', '-title,id', '(select 1)', '.*', '-(a+)+$']],
    ['task', '/api/tasks?status=', ["todo' OR '1'='1", 'todo|done', '%']],
    ['task', '/api/task-templates?category=', ["x' OR '1'='1", '%', '.*']],
    ['traces', '/api/v1/traces?status=', ["sent' OR '1'='1", 'sent|read']],
    ['traces', '/api/v1/traces?instance=', ["i' OR '1'='1", '%', '\\']],
    ['agents', '/api/v1/tasks?status=', ["done' --", '.*']],
    ['scheduler', '/api/v1/executions?status=', ["running' --", '.*']],
  ] as [Service, string, string[]][])('%s %s…: a 400 naming the parameter, or a filter that matches the text as written (nothing here)', async (service, prefix, values) => {
    for (const value of values) {
      const res = await get(service, `${prefix}${encodeURIComponent(value)}`);
      expect({ value, status: [200, 400].includes(res.status) }).toEqual({ value, status: true });
      if (res.status === 400) expect(messageOf(service, res.json)).toContain(prefix.slice(prefix.indexOf('?') + 1, -1));
      else expect({ value, items: pageOf(res.json).items }).toEqual({ value, items: 0 });
    }
  });

  test('a task or template search finds a title or name whichever Unicode form (NFC, NFD) it and the term are written in', async () => {
    const repo = makeGitRepo();
    const project = (await s.stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'unicode forms', repository: { url: repo } } })).json().data.id as string;
    for (const title of ['Caf\u00e9 menu', 'Cre\u0300me list']) {
      await s.stack.app('task').inject({ method: 'POST', url: '/api/tasks', payload: { projectId: project, title } });
      await s.stack.app('task').inject({ method: 'POST', url: '/api/task-templates', payload: template(`${title} template`) });
    }
    for (const url of [`/api/tasks?projectId=${project}&search=`, '/api/task-templates?search=']) {
      const found: Record<string, number> = {};
      for (const term of ['caf\u00e9', 'cafe\u0301', 'cr\u00e8me', 'cre\u0300me']) {
        const res = await get('task', `${url}${encodeURIComponent(term)}`);
        found[term.normalize('NFD') === term ? `${term.normalize('NFC')} (NFD)` : `${term} (NFC)`] = pageOf(res.json).items;
      }
      expect({ url, found }).toEqual({ url, found: { 'café (NFC)': 1, 'café (NFD)': 1, 'crème (NFC)': 1, 'crème (NFD)': 1 } });
    }
  });
});

describe('an id of another kind of resource', () => {
  test.each(SERVICES)('%s: every GET operation with a path id, given ids of other resources, answers in shape and never 5xx', async (service) => {
    const repo = makeGitRepo();
    const project = (await s.stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: `kinds ${service}`, repository: { url: repo } } })).json().data.id as string;
    const task = (await s.stack.app('task').inject({ method: 'POST', url: '/api/tasks', payload: { projectId: project, title: 'kinds' } })).json().data.id as string;
    const trace = (await s.stack.app('traces').inject({ method: 'POST', url: '/api/v1/traces', headers: s.authHeaders('traces'), payload: { messageId: `kinds-${service}`, instance: 'i', to: '+15550102000', message: 'k' } })).json().id as string;
    const ids = [project, task, trace, project.toUpperCase(), `${task}/`, `${trace}%20`];
    let probed = 0;
    for (const op of await getOperations(service)) {
      const params = op.parameters.filter((p) => p.in === 'path');
      if (!params.length || /\/ws\b/.test(op.path)) continue;
      for (const id of ids) {
        const url = params.reduce((u, p) => u.replace(`{${p.name}}`, id), op.path);
        const res = await get(service, url);
        probed++;
        expect({ url, server: res.status >= 500 }).toEqual({ url, server: false });
        // the code-hosting routes' own shape (docs/codehost.md, "Errors") has its message beside the code
        const message = (res.json as Json)?.message ?? messageOf(service, res.json);
        if (res.status >= 400) expect({ url, message }).not.toEqual({ url, message: 'undefined' });
      }
    }
    expect(probed).toBeGreaterThan(0);
  });
});

describe('identical writes at once', () => {
  const burst = async <T>(n: number, f: () => Promise<T>) => Promise.all(Array.from({ length: n }, f));

  test('a project name taken by 8 requests at once (names differing in case too): one 201, the rest 409 PROJECT_EXISTS', async () => {
    const repo = makeGitRepo();
    const names = ['Racing', 'racing', 'RACING', 'Racing', 'racing', 'rAcing', 'Racing', 'racinG'];
    const answers = await Promise.all(names.map((name) => s.stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name, repository: { url: repo } } })));
    const statuses = answers.map((a) => a.statusCode).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const a of answers.filter((x) => x.statusCode === 409)) expect(a.json().error.code).toBe('PROJECT_EXISTS');
  });

  test('a scheduler workflow name and a source URL taken by 8 requests at once: one 201, the rest "already exists" (409 for a name, 400 for a URL, as documented)', async () => {
    const workflows = await burst(8, () =>
      s.stack.app('scheduler').inject({ method: 'POST', url: '/api/v1/workflows', headers: s.authHeaders('scheduler'), payload: { name: 'racing', tasks: [{ name: 't', type: 'script', script: 'true' }] } }),
    );
    expect(workflows.map((a) => a.statusCode).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    const sources = await burst(8, () =>
      s.stack.app('scheduler').inject({ method: 'POST', url: '/api/v1/sources', headers: s.authHeaders('scheduler'), payload: { source_type: 'flow-builder', url: `${platformUrl}/racing` } }),
    );
    expect(sources.map((a) => a.statusCode).sort()).toEqual([201, 400, 400, 400, 400, 400, 400, 400]);
    for (const a of [...workflows, ...sources].filter((x) => x.statusCode !== 201)) expect(a.json().detail).toMatch(/^(Workflow racing|Source with URL \S+) already exists$/);
  });

  test('one trace ingested by 8 requests at once: one 201, seven 200 with the same trace, one row', async () => {
    const answers = await burst(8, () =>
      s.stack.app('traces').inject({ method: 'POST', url: '/api/v1/traces', headers: s.authHeaders('traces'), payload: { messageId: 'racing', instance: 'race', to: '+15550102000', message: 'once' } }),
    );
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.json().id)).size).toBe(1);
    expect((await s.stack.db.query("SELECT count(*)::int AS n FROM traces WHERE instance = 'race'")).rows[0].n).toBe(1);
  });
});

describe('WebSockets', () => {
  const open = (path: string) =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${s.ports.task}${path}`);
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    });
  const closed = (ws: WebSocket) => new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  /** the client's own TCP socket, to stop and resume reading */
  const tcp = (ws: WebSocket) => (ws as unknown as { _socket: net.Socket })._socket;
  /**
   * `serverDropped()`: true once the server has dropped one of its sockets (sent its close, which waits behind what the client has not
   * read). The floods below stop there and read at once: the server cuts a dropped client that has not read its close
   * within DROP_GRACE_MS (5 s), and a flood that went on to its full count first took longer than that under a
   * loaded CI run (ci56c: 1006 and no reason).
   */
  const serverSockets = () => [...(s.stack.app('task') as unknown as { websocketServer: { clients: Set<WebSocket> } }).websocketServer.clients];
  /** `serverDropped()` for the sockets opened after this call (not one an earlier test left closing) */
  const droppedSince = () => {
    const earlier = new Set(serverSockets());
    return () => serverSockets().some((c) => !earlier.has(c) && c.readyState === c.CLOSING);
  };

  test('a client that floods /ws with JSON pings and reads none of the pongs is closed with 1008 and a reason, once it reads again', async () => {
    const serverDropped = droppedSince();
    const ws = await open('/ws');
    tcp(ws).pause();
    const close = closed(ws);
    ws.on('message', () => undefined);
    const ping = JSON.stringify({ type: 'ping' });
    // ~70 bytes of pong each: past the 8 MiB a socket may have waiting, plus what the kernel buffers hold
    for (let i = 0; i < 400_000 && ws.readyState === ws.OPEN && !serverDropped(); i++) {
      ws.send(ping);
      if (i % 20_000 === 0) await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 200));
    tcp(ws).resume();
    expect(await close).toEqual({ code: 1008, reason: FAR_BEHIND_REASON });
  }, 60_000);

  test('a client that floods a socket with protocol pings and reads none of the pongs is closed with 1008 and a reason', async () => {
    const serverDropped = droppedSince();
    const ws = await open('/ws/events');
    tcp(ws).pause();
    const close = closed(ws);
    ws.on('message', () => undefined);
    const payload = Buffer.alloc(125, 'p');
    for (let i = 0; i < 150_000 && ws.readyState === ws.OPEN && !serverDropped(); i++) {
      ws.ping(payload);
      if (i % 10_000 === 0) await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 200));
    tcp(ws).resume();
    expect(await close).toEqual({ code: 1008, reason: PING_FLOOD_REASON });
  }, 60_000);

  test('messages a client sends to a server-only stream (/ws/events) are ignored: the stream stays open and goes on', async () => {
    const ws = await open('/ws/events');
    const messages: Json[] = [];
    ws.on('message', (m) => messages.push(JSON.parse(String(m)) as Json));
    for (const m of ['hello', JSON.stringify({ type: 'subscribe', taskId: null }), Buffer.alloc(1000, 1)]) ws.send(m);
    const repo = makeGitRepo();
    const project = await s.stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name: 'after messages', repository: { url: repo } } });
    await s.stack.app('task').inject({ method: 'POST', url: '/api/tasks', payload: { projectId: project.json().data.id, title: 'after messages' } });
    const deadline = Date.now() + 20_000;
    while (!messages.some((m) => m.type === 'task.created') && Date.now() < deadline && ws.readyState === ws.OPEN) await new Promise((r) => setTimeout(r, 50));
    expect(ws.readyState).toBe(ws.OPEN);
    expect(messages.map((m) => m.type)).toContain('task.created');
    ws.close();
  });
});

describe('dates, zones and schedules at their edges', () => {
  const CASES: [string, Json][] = [
    ['never fires', { type: 'cron', schedule: '* * 31 2 *' }],
    ['@every 0s', { type: 'cron', schedule: '@every 0s' }],
    ['@every 1e9 seconds', { type: 'cron', schedule: '@every 1000000000s' }],
    ['@every past Go durations', { type: 'cron', schedule: '@every 9999999999999h' }],
    ['Etc/GMT+14 (no such zone)', { type: 'cron', schedule: '0 9 * * *', timezone: 'Etc/GMT+14' }],
    ['Etc/GMT-14', { type: 'cron', schedule: '0 9 * * *', timezone: 'Etc/GMT-14' }],
    ['an unknown zone in CRON_TZ', { type: 'cron', schedule: 'CRON_TZ=Mars/Olympus_Mons 0 9 * * *' }],
    ['a daily time in a DST gap', { type: 'cron', schedule: '30 2 * * *', timezone: 'Europe/Paris' }],
    ['year 0', { type: 'one-time', at: '0000-01-01T00:00:00Z' }],
    ['year 10000', { type: 'one-time', at: '10000-01-01T00:00:00Z' }],
    ['a leap second', { type: 'one-time', at: '2098-12-31T23:59:60Z' }],
    ['a wall-clock time in a DST gap', { type: 'one-time', at: '2099-03-29T02:30:00', timezone: 'Europe/Paris' }],
    ['a wall-clock time that happens twice', { type: 'one-time', at: '2099-10-25T02:30:00', timezone: 'Europe/Paris' }],
    ['an offset of +14:00', { type: 'one-time', at: '2099-01-01T00:00:00+14:00' }],
    ['an offset of +24:00', { type: 'one-time', at: '2099-01-01T00:00:00+24:00' }],
    ['February 30th', { type: 'one-time', at: '2099-02-30T00:00:00Z' }],
    ['the past', { type: 'one-time', at: '2001-01-01T00:00:00Z' }],
    ['an expanded year', { type: 'one-time', at: '+275760-09-13T00:00:00Z' }],
  ];

  test('every schedule string, zone and time is a 201 or a 400 saying why, never a 500; a one-time wall-clock time in a DST gap or fold runs when documented', async () => {
    const key = s.authHeaders('scheduler');
    const created = await s.stack.app('scheduler').inject({ method: 'POST', url: '/api/v1/workflows', headers: key, payload: { name: 'edges', tasks: [{ name: 't', type: 'script', script: 'true' }] } });
    expect(created.statusCode).toBe(201);
    const answers: Record<string, string> = {};
    try {
      for (const [what, body] of CASES) {
        const res = await s.stack.app('scheduler').inject({ method: 'POST', url: '/api/v1/workflows/edges/schedules', headers: key, payload: { ...body, enabled: false } });
        const json = res.json() as Json;
        answers[what] = res.statusCode === 201 && json.type === 'one-time' ? `201 ${String(json.runAt)}` : String(res.statusCode);
        expect({ what, status: [201, 400].includes(res.statusCode) }).toEqual({ what, status: true });
        if (res.statusCode === 400) expect({ what, detail: typeof json.detail }).toEqual({ what, detail: 'string' });
      }
    } finally {
      await s.stack.app('scheduler').inject({ method: 'DELETE', url: '/api/v1/workflows/edges', headers: key });
    }
    // a wall-clock time skipped by the spring change moves forward by the gap, a repeated one is the later of the two
    // (docs/scheduler.md, "One-time schedules"); Etc/GMT+14 does not exist (the sign is POSIX's: Etc/GMT-14 is UTC+14)
    expect(answers).toEqual({
      'never fires': '400',
      '@every 0s': '400',
      '@every 1e9 seconds': '201',
      '@every past Go durations': '400',
      'Etc/GMT+14 (no such zone)': '400',
      'Etc/GMT-14': '201',
      'an unknown zone in CRON_TZ': '400',
      'a daily time in a DST gap': '201',
      'year 0': '400',
      'year 10000': '400',
      'a leap second': '400',
      'a wall-clock time in a DST gap': '201 2099-03-29T01:30:00.000Z',
      'a wall-clock time that happens twice': '201 2099-10-25T01:30:00.000Z',
      'an offset of +14:00': '201 2098-12-31T10:00:00.000Z',
      'an offset of +24:00': '400',
      'February 30th': '400',
      'the past': '400',
      'an expanded year': '400',
    });
  });
});
