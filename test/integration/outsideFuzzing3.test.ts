/**
 * What session 47's outside-fuzzing round found, sent to the real services over loopback as raw HTTP exchanges (Node's
 * parser and Fastify's, not `inject`) where the bytes matter, each answer checked for its status and documented shape:
 * - a WebSocket handshake sent as HTTP/1.0 was upgraded (101); RFC 6455 §4.1 requires HTTP/1.1 or later: now the 400
 *   of any other bad handshake;
 * - a Content-Type whose parameters are not `; name=value` (`application/json; charset=`, `; utf-8`, an unclosed
 *   quote) was `Unsupported charset ""` or read as JSON: now a 415 saying what to send, on every service;
 * - control characters in titles, names and descriptions were stored as sent (an escape sequence in a task title
 *   reached the board and agents' prompts): names and titles now refuse every control, multi-line text every C0
 *   control but tab and line breaks, and the documents' patterns say exactly that;
 * - numbers in query strings at the edges (1e400, 1e-400, past 2^53, repeated, as arrays; -0 read as 0): checked,
 *   already the schema's 400 naming the parameter (the strict numerals of api/http/validation.ts); kept as a guard.
 */
import net from 'node:net';
import { NAME_PATTERN, NON_BLANK_TEXT_PATTERN, TEXT_PATTERN } from '../../api/http/inputPolicy';
import { makeGitRepo } from '../support/harness';
import { rawExchange } from '../support/rawExchange';
import { messageOf, SERVICES, startOutsideServices, type Json, type Service } from '../support/outsideServices';

const o = startOutsideServices();
const { ports, keyLine, authHeaders, count } = o;

describe('a WebSocket handshake over HTTP/1.0', () => {
  const handshake = (version: string) =>
    `GET /ws/events HTTP/${version}\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;

  test('is the 400 of any other bad handshake, in the envelope, and the connection closes; HTTP/1.1 is still upgraded', async () => {
    const refused = await rawExchange(ports.task as number, handshake('1.0'));
    expect([refused.status, (refused.json as Json).error]).toEqual([
      400,
      {
        code: 'VALIDATION_ERROR',
        message: 'WebSocket handshake is invalid: it was sent as HTTP/1.0; a handshake must be HTTP/1.1 or later (RFC 6455 §4.1)',
        details: { httpVersion: 'must be 1.1 or later' },
      },
    ]);
    expect(refused.headers.connection).toBe('close');
    const accepted = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(ports.task as number, '127.0.0.1', () => socket.write(handshake('1.1')));
      socket.once('data', (c: Buffer) => {
        socket.destroy();
        resolve(c.toString('latin1').split('\r\n')[0] as string);
      });
      socket.on('error', reject);
    });
    expect(accepted).toBe('HTTP/1.1 101 Switching Protocols');
  });
});

describe('a Content-Type whose parameters are malformed', () => {
  /** One JSON body route per service (the body itself need not be valid: the media type is read first). */
  const ROUTES: Record<Service, string> = { task: '/api/projects', scheduler: '/api/v1/sources', agents: '/api/v1/memory', traces: '/api/v1/traces' };
  const post = (service: Service, contentType: string) => {
    const body = Buffer.from('{}');
    return rawExchange(
      ports[service] as number,
      Buffer.concat([Buffer.from(`POST ${ROUTES[service]} HTTP/1.1\r\nHost: localhost\r\n${keyLine(service)}Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`, 'latin1'), body]),
    );
  };

  test.each(SERVICES)('%s: a 415 in its shape saying what to send; a well-formed or empty parameter is read as JSON', async (service) => {
    for (const contentType of ['application/json; charset=', 'application/json; utf-8', 'application/json; charset="utf-8', 'application/json; charset = utf-8', 'application/json; =utf-8', 'application/json; charset=utf-8 x']) {
      const res = await post(service, contentType);
      expect([contentType, res.status, messageOf(service, res.json)]).toEqual([
        contentType,
        415,
        `Content-Type ${JSON.stringify(contentType)} is malformed: each parameter after ";" must be name=value, the value not empty (such as charset=utf-8); send Content-Type: application/json`,
      ]);
      if (service === 'task') expect(((res.json as Json).error as Json).code).toBe('VALIDATION_ERROR');
    }
    // read as JSON: the body's own 400 (`{}` lacks required fields), not a 415
    for (const contentType of ['application/json', 'application/json;', 'application/json ; ; charset="UTF-8"', 'application/json;charset=utf-8;x="a;b"']) {
      const res = await post(service, contentType);
      expect([contentType, res.status]).toEqual([contentType, 400]);
    }
    // an empty quoted charset is well-formed and names no charset the service reads
    const empty = await post(service, 'application/json; charset=""');
    expect([empty.status, messageOf(service, empty.json)]).toEqual([415, 'Unsupported charset "": send the JSON body as UTF-8 (charset=utf-8, or no charset)']);
  });
});

describe('control characters in names, titles and multi-line text', () => {
  const CONTROLS = ['\u0007', '\u001b[31m', '\u0008', '\u000b', '\u000c', '\u001f'];
  const inject = (service: Service, method: string, url: string, payload: unknown) =>
    o.stack.app(service).inject({ method: method as 'POST', url, payload: payload as object, headers: authHeaders(service) });

  let projectId = '';
  beforeAll(async () => {
    const res = await inject('task', 'POST', '/api/projects', { name: 'controls', repository: { url: makeGitRepo() } });
    expect(res.statusCode).toBe(201);
    projectId = res.json().data.id;
  });

  test('task service: a task title or label with any control, a description with a C0 control but tab/LF/CR, is a 400; nothing is stored', async () => {
    const before = await count('tasks');
    const refused: [Json, string][] = [];
    for (const c of CONTROLS) {
      refused.push([{ projectId, title: `t${c}` }, 'title'], [{ projectId, title: 't', labels: [`l${c}`] }, 'labels.0'], [{ projectId, title: 't', description: `d${c}` }, 'description']);
    }
    refused.push([{ projectId, title: 'line\nbreak' }, 'title'], [{ projectId, title: 'c1\u0085' }, 'title'], [{ projectId, title: 'bidi\u202e' }, 'title'], [{ projectId, title: 't', assignee: 'a\u001b' }, 'assignee']);
    for (const [body, field] of refused) {
      const res = await inject('task', 'POST', '/api/tasks', body);
      expect([body, res.statusCode, res.json().error.code, Object.keys(res.json().error.details)]).toEqual([body, 400, 'VALIDATION_ERROR', [field]]);
    }
    expect(await count('tasks')).toBe(before);
    // tab, line breaks, C1 and DEL in a description are text; a title may hold any other character
    const ok = await inject('task', 'POST', '/api/tasks', { projectId, title: 'Fix «login» 😀', description: 'step 1\r\n\tstep 2\u007f\u0085' });
    expect(ok.statusCode).toBe(201);
    const row = await o.stack.db.query<{ title: string; description: string }>('SELECT title, description FROM tasks WHERE id = $1', [ok.json().data.id]);
    expect(row.rows[0]).toEqual({ title: 'Fix «login» 😀', description: 'step 1\r\n\tstep 2\u007f\u0085' });
    // PATCH says the same
    const patched = await inject('task', 'PATCH', `/api/tasks/${ok.json().data.id}`, { title: 'x\u0007' });
    expect([patched.statusCode, Object.keys(patched.json().error.details)]).toEqual([400, ['title']]);
  });

  test('an X-User-Email with a bidi override or a C1 control (UTF-8 bytes) names nobody: the task is created by the local user', async () => {
    const asUser = (email: string) => {
      const body = Buffer.from(JSON.stringify({ projectId, title: 'by whom' }));
      const head = `POST /api/tasks HTTP/1.1\r\nHost: localhost\r\nX-User-Email: ${Buffer.from(email, 'utf8').toString('latin1')}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      return rawExchange(ports.task as number, Buffer.concat([Buffer.from(head, 'latin1'), body]));
    };
    const localUser = (await inject('task', 'POST', '/api/tasks', { projectId, title: 'by whom' })).json().data.createdBy;
    for (const email of ['evil\u202e@example.com', 'nel\u0085@example.com', 'a@example.com\u2066']) {
      const res = await asUser(email);
      expect([email, res.status, ((res.json as Json).data as Json).createdBy]).toEqual([email, 201, localUser]);
    }
    // a well-formed address, non-ASCII included, still names its user
    const named = await asUser('Zoë@example.com');
    expect([named.status, ((named.json as Json).data as Json).createdBy]).toEqual([201, 'zoë@example.com']);
  });

  test('NUL anywhere is the input policy\'s 400 before validation, on each service, never a database error', async () => {
    for (const [service, url, body] of [
      ['task', '/api/tasks', { projectId, title: 'nul', description: 'a\u0000b' }],
      ['scheduler', '/api/v1/workflows', { name: 'nul', description: 'a\u0000b', tasks: [{ name: 't', type: 'script', script: 'echo' }] }],
      ['agents', '/api/v1/memory', { content: 'a\u0000b' }],
      ['traces', '/api/v1/traces', { messageId: 'nul', instance: 'i', to: '+15550102000', message: 'a\u0000b' }],
    ] as const) {
      const res = await inject(service, 'POST', url, body);
      const field = service === 'scheduler' || service === 'task' ? 'description' : service === 'agents' ? 'content' : 'message';
      expect([service, res.statusCode, messageOf(service, res.json())]).toEqual([service, 400, `Request body is invalid: ${field} must not contain NUL (\\u0000) characters`]);
    }
  });

  test('scheduler, agents, traces: the same rules, in {detail}; nothing is stored', async () => {
    const workflows = await count('scheduler_workflows').catch(() => count('workflows'));
    const memory = await count('agent_memory');
    const traces = await count('message_traces').catch(() => -1);
    const wf = (over: Json) => ({ name: `wf-${Math.random().toString(36).slice(2, 8)}`, tasks: [{ name: 't', type: 'script', script: 'echo hi' }], ...over });
    for (const [service, url, body, field] of [
      ['scheduler', '/api/v1/workflows', wf({ description: 'bell\u0007' }), 'description'],
      ['scheduler', '/api/v1/workflows', wf({ tasks: [{ name: 'esc\u001b[0m', type: 'script', script: 'echo' }] }), 'tasks.0.name'],
      ['scheduler', '/api/v1/workflows', wf({ tasks: [{ name: 't', type: 'script', script: 'echo \u0001' }] }), 'tasks.0.script'],
      ['agents', '/api/v1/memory', { content: 'note\u0008' }, 'content'],
      ['agents', '/api/v1/memory', { content: '\u000b x' }, 'content'],
      ['traces', '/api/v1/traces', { messageId: 'm\u0007', instance: 'i', to: '+15550102000', message: 'm' }, 'messageId'],
      ['traces', '/api/v1/traces', { messageId: 'm', instance: 'i\u202e', to: '+15550102000', message: 'm' }, 'instance'],
      ['traces', '/api/v1/traces', { messageId: 'm', instance: 'i', to: '+15550102000', message: 'esc\u001b' }, 'message'],
    ] as const) {
      const res = await inject(service, 'POST', url, body);
      expect([service, field, res.statusCode, messageOf(service, res.json())]).toEqual([service, field, 400, expect.stringMatching(new RegExp(`^Request body is invalid: ${field.replace('.', '\\.')} must match pattern `))]);
    }
    expect(await count('scheduler_workflows').catch(() => count('workflows'))).toBe(workflows);
    expect(await count('agent_memory')).toBe(memory);
    if (traces >= 0) expect(await count('message_traces')).toBe(traces);
    // multi-line text with tabs and line breaks is stored as sent
    const stored = await inject('agents', 'POST', '/api/v1/memory', { content: '\tline 1\r\nline 2\n' });
    expect([stored.statusCode, stored.json().content]).toEqual([201, '\tline 1\r\nline 2\n']);
    const trace = await inject('traces', 'POST', '/api/v1/traces', { messageId: 'multi-line', instance: 'i', to: '+15550102000', message: 'a\nb\tc' });
    expect([trace.statusCode, trace.json().message]).toEqual([201, 'a\nb\tc']);
  });

  test('the documents show exactly those patterns on those fields', async () => {
    const doc = (await inject('task', 'GET', '/api/openapi.json', undefined)).json();
    const createTask = doc.paths['/api/tasks'].post.requestBody.content['application/json'].schema;
    const props = (createTask.$ref ? doc.components.schemas[createTask.$ref.split('/').pop()] : createTask).properties;
    expect([props.title.pattern, props.description.pattern]).toEqual([NAME_PATTERN, TEXT_PATTERN]);
    const agents = (await inject('agents', 'GET', '/api/v1/openapi.json', undefined)).json();
    const memory = agents.paths['/api/v1/memory'].post.requestBody.content['application/json'].schema;
    expect((memory.$ref ? agents.components.schemas[memory.$ref.split('/').pop()] : memory).properties.content.pattern).toBe(NON_BLANK_TEXT_PATTERN);
  });
});

describe('numbers at the edges in query strings and headers', () => {
  /** A list of each service and its numeric query parameters. */
  const LISTS: [Service, string, string[]][] = [
    ['task', '/api/tasks', ['page', 'limit']],
    ['scheduler', '/api/v1/executions', ['offset', 'limit']],
    ['agents', '/api/v1/tasks', ['offset', 'limit']],
    ['traces', '/api/v1/traces', ['offset', 'limit']],
  ];
  test.each(LISTS)('%s: numbers past any bound, in exponent form, repeated or as arrays are a 400 naming the parameter; -0 is 0', async (service, url, names) => {
    for (const name of names) {
      for (const value of ['1e400', '1e-400', 'Infinity', 'NaN', '9007199254740993', '2147483648', '99999999999999999999', '-1', '%2B1', '1.0', '0x10', '1%00']) {
        const res = await o.stack.app(service).inject({ method: 'GET', url: `${url}?${name}=${value}`, headers: authHeaders(service) });
        expect([name, value, res.statusCode, messageOf(service, res.json())]).toEqual([name, value, 400, expect.stringMatching(/^Request (query|querystring) is invalid: /)]);
      }
      for (const q of [`${name}[]=1`, `${name}[a]=1`, `${name}=1&${name}=2`]) {
        const res = await o.stack.app(service).inject({ method: 'GET', url: `${url}?${q}`, headers: authHeaders(service) });
        expect([q, res.statusCode]).toEqual([q, 400]);
      }
    }
    const zero = names.includes('offset') ? 'offset=-0' : 'page=1&limit=1';
    const minusZero = await o.stack.app(service).inject({ method: 'GET', url: `${url}?${zero}`, headers: authHeaders(service) });
    expect([zero, minusZero.statusCode]).toEqual([zero, 200]);
  });
});
