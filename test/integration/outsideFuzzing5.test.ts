/**
 * What session 49's outside-fuzzing round found and decided, each sent to the real services over loopback as raw
 * HTTP/1.1, each answer checked for its status and documented shape:
 * - Node keeps the first 1000 header lines of a request (its parser's default, `maxHeadersCount` 2000 = 1000 pairs)
 *   and drops the rest without a word: a request whose `X-API-Key` came after 1000 others was a 401 "Invalid API
 *   key" with the right key, a JSON body whose `Content-Type` came late a "body must be object", and a second
 *   `Host` or `Content-Type` line past the 1000th escaped the "must be sent once" rules. Now a request of more than
 *   1000 header lines is a 431 saying so, in the service's shape, before authentication; 1000 are read as sent.
 * - a 400's `details` named every field that failed: 100,000 labels that are no strings (a 0.7 MB body, within the
 *   1 MiB bound) were answered with 3 MB of details, and 100,000 one-letter approvers with 5.8 MB, seconds of the
 *   service's CPU for each; now the first 50 fields are named and one more entry, `(more)`, says how many were not.
 * - a URL past the parser's 64 KiB (which hold the request line and the headers) was told "Request headers are larger
 *   than 64 KiB in all; send smaller headers", though its headers were a few bytes (an MCP tool call with a long
 *   path parameter showed the model that): now the 431 names the URL too.
 */
import { rawExchange } from '../support/rawExchange';
import { LIST, SERVICES, startOutsideServices, type Json, type Service } from '../support/outsideServices';

const o = startOutsideServices();
const { ports, keyLine } = o;
/** `count` header lines in all: Host, fillers, then the key (if any) and Connection last. */
const withHeaderLines = (service: Service, count: number, method = 'GET', target = LIST[service], tail = '') => {
  const own = 2 + (service === 'task' ? 0 : 1) + (tail ? tail.split('\r\n').length - 1 : 0);
  const fillers = Array.from({ length: count - own }, (_, i) => `X-Filler-${i}: v\r\n`).join('');
  return `${method} ${target} HTTP/1.1\r\nHost: localhost\r\n${fillers}${tail}${keyLine(service)}Connection: close\r\n\r\n`;
};
const shapeOf = (service: Service, message: string) =>
  service === 'task' ? { success: false, error: { code: 'VALIDATION_ERROR', message, details: { headers: 'at most 1000 lines' } }, meta: expect.any(Object) } : { detail: message };
const TOO_MANY = 'Request headers are more than 1000 lines; send fewer headers';

describe('a request of more than 1000 header lines', () => {
  test.each(SERVICES)('%s: 1000 lines are read as sent (the key last); 1001 and 3000 are a 431 saying so, before authentication', async (service) => {
    const ok = await rawExchange(ports[service] as number, withHeaderLines(service, 1000));
    expect([service, ok.status]).toEqual([service, 200]);
    for (const count of [1001, 3000]) {
      const res = await rawExchange(ports[service] as number, withHeaderLines(service, count));
      expect([service, count, res.status, res.json]).toEqual([service, count, 431, shapeOf(service, TOO_MANY)]);
    }
  });

  test('a JSON body whose Content-Type comes past the 1000th line is not read as bodiless: the 431, nothing stored', async () => {
    const before = (await o.stack.db.query('SELECT count(*)::int AS n FROM projects')).rows[0].n;
    const body = JSON.stringify({ name: 'late content type', git_repo_path: '/nonexistent' });
    const res = await rawExchange(ports.task as number, withHeaderLines('task', 1200, 'POST', '/api/projects', `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`).replace(/\r\n\r\n$/, `\r\n\r\n${body}`));
    expect([res.status, (res.json as Json).error]).toEqual([431, shapeOf('task', TOO_MANY).error]);
    expect((await o.stack.db.query('SELECT count(*)::int AS n FROM projects')).rows[0].n).toBe(before);
  });
});

describe('a body that fails validation in very many fields', () => {
  test('the 400 names the first 50 fields and says how many more failed; its size does not grow with the body', async () => {
    const project = '44444444-4444-4444-8444-444444444444';
    for (const [target, body] of [
      ['/api/tasks', { projectId: project, title: 'many labels', labels: Array.from({ length: 100_000 }, (_, i) => i) }],
      ['/api/approvals', { approvers: Array.from({ length: 100_000 }, () => 'a') }],
    ] as const) {
      const text = JSON.stringify(body);
      const res = await rawExchange(ports.task as number, `POST ${target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
      const error = (res.json as Json).error as { code: string; message: string; details: Record<string, string> };
      expect([target, res.status, error.code]).toEqual([target, 400, 'VALIDATION_ERROR']);
      const keys = Object.keys(error.details);
      expect([target, keys.length, keys.at(-1)]).toEqual([target, 51, '(more)']);
      expect(error.details['(more)']).toMatch(/^\d+ more fields? (is|are) invalid, not listed here$/);
      expect(error.message.startsWith('Request body is invalid: ')).toBe(true);
      expect(res.body.length).toBeLessThan(20_000);
    }
    expect((await o.stack.db.query("SELECT count(*)::int AS n FROM tasks WHERE title = 'many labels'")).rows[0].n).toBe(0);
  });
});

describe('a URL past the 64 KiB the parser reads of a request line and its headers', () => {
  test.each(SERVICES)('%s: the 431 says to send a shorter URL, as for headers past it', async (service) => {
    const message = 'The request line and headers are larger than 64 KiB in all; send a shorter URL or smaller headers';
    for (const target of [`${LIST[service]}/${'a'.repeat(70_000)}`, `${LIST[service]}?q=${'a'.repeat(70_000)}`]) {
      const res = await rawExchange(ports[service] as number, `GET ${target} HTTP/1.1\r\nHost: localhost\r\n${keyLine(service)}Connection: close\r\n\r\n`);
      expect([service, target.length, res.status, service === 'task' ? ((res.json as Json).error as Json).message : (res.json as Json).detail]).toEqual([service, target.length, 431, message]);
    }
  });
});
