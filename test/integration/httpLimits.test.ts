/**
 * Limits of the HTTP layer seen by a real client (not inject, which skips Node's parser): a query as long as the
 * documents allow reaches validation and is answered in the service's shape, never with Node's bare 431.
 */
import { startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
let base: string;
beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  base = await stack.app('task').listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await stack?.close();
});

test('a query parameter one past its maxLength of 4-byte characters (48 KiB encoded) is a 400 in the envelope, not a 431', async () => {
  const longFile = encodeURIComponent('\u{1F600}'.repeat(4097));
  expect(longFile.length).toBeGreaterThan(48 * 1024);
  const res = await fetch(`${base}/api/filesystem/list?path=${longFile}`);
  expect(res.status).toBe(400);
  const body = (await res.json()) as { success: boolean; error: { code: string } };
  expect(body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
});
