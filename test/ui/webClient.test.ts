/** The board's API client and stream helpers that need no browser: error shapes, SSE parsing, backoff. */
import { ApiError, buildUrl, errorFromBody } from '../../web/src/api/client';
import { backoffDelay, createSseParser } from '../../web/src/api/streams';
import { WEBHOOK_EVENTS as BOARD_WEBHOOK_EVENTS } from '../../web/src/api/settings';
import { WEBHOOK_EVENTS } from '../../lib/db/webhooks';

test("the board offers exactly the service's webhook events (web/src/api/settings.ts keeps a copy)", () => {
  expect([...BOARD_WEBHOOK_EVENTS]).toEqual([...WEBHOOK_EVENTS]);
});

test("errors of both shapes carry the server's message", () => {
  const envelope = errorFromBody(409, { success: false, error: { code: 'PROJECT_EXISTS', message: 'A project named "x" already exists', details: { name: 'x' } } });
  expect(envelope).toBeInstanceOf(ApiError);
  expect([envelope.message, envelope.status, envelope.code, envelope.details]).toEqual(['A project named "x" already exists', 409, 'PROJECT_EXISTS', { name: 'x' }]);
  const detail = errorFromBody(404, { detail: 'Source not found' });
  expect([detail.message, detail.status]).toEqual(['Source not found', 404]);
  expect(errorFromBody(422, { detail: [{ loc: ['body', 'cron'], msg: 'invalid' }] }).message).toContain('invalid');
  expect(errorFromBody(502, '<html>bad gateway</html>').message).toBe('Request failed with HTTP 502');
});

test('URLs: task service under /api, the other services through the /svc proxy; empty query values are left out', () => {
  expect(buildUrl('task', '/projects/p1/tasks', { page: 2, limit: 100, search: '', q: undefined })).toBe('/api/projects/p1/tasks?page=2&limit=100');
  expect(buildUrl('scheduler', '/schedules')).toBe('/svc/scheduler/api/v1/schedules');
  expect(buildUrl('traces', '/traces', { status: 'sent' })).toBe('/svc/traces/api/v1/traces?status=sent');
});

test('the SSE parser splits events across chunks, keeps the last id, ignores comments', () => {
  const events: [string, string, string | undefined][] = [];
  const feed = createSseParser((event, data, id) => events.push([event, data, id]));
  feed('retry: 2000\n\n: keep-alive\n\nid: 7\nevent: log\ndata: {"a"');
  feed(':1}\n\ndata: line one\ndata: line two\r\n\r\nid: 8\nevent: end\ndata: {}\n\n');
  expect(events).toEqual([
    ['log', '{"a":1}', '7'],
    ['message', 'line one\nline two', '7'],
    ['end', '{}', '8'],
  ]);
});

test('reconnect backoff doubles from 250 ms up to 10 s, with jitter', () => {
  for (let i = 0; i < 50; i++) {
    expect(backoffDelay(0)).toBeGreaterThanOrEqual(200);
    expect(backoffDelay(0)).toBeLessThanOrEqual(300);
    expect(backoffDelay(3)).toBeGreaterThanOrEqual(1600);
    expect(backoffDelay(3)).toBeLessThanOrEqual(2400);
    expect(backoffDelay(20)).toBeLessThanOrEqual(12_000);
    expect(backoffDelay(20)).toBeGreaterThanOrEqual(8000);
  }
});
