/**
 * Answers of servers Armada does not run are read up to a limit (lib/http/readBounded.ts), not buffered whole: a flow
 * platform answering more than 16 MiB fails its task with a message that says what to check, and the rest of the
 * answer is never read (the connection is dropped). Before, `res.text()` took whatever came into the worker's memory.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBoundedText } from '../../lib/http/readBounded';
import { MAX_PLATFORM_ANSWER_BYTES } from '../../lib/scheduler/platforms';
import { FAKE_FLOWS, startFakeFlowBuilder, type FakeFlowBuilder } from '../support/fakeFlowBuilder';
import type { TestStack } from '../support/harness';
import { runWorkflowToEnd, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
let fake: FakeFlowBuilder;

beforeAll(async () => {
  stack = await startSchedulerStack();
  fake = await startFakeFlowBuilder();
}, 120_000);
afterAll(async () => {
  await fake?.close();
  await stack?.close();
});

test('a flow platform answering more than 16 MiB: the task fails saying so, and the answer is not read to its end', async () => {
  const inject = schedulerInject(stack);
  expect((await inject('POST', '/api/v1/sources', { name: 'big', source_type: 'langflow', url: fake.url })).statusCode).toBe(201);
  expect((await inject('POST', '/api/v1/workflows', { name: 'big-answer', tasks: [{ name: 'flow', type: 'flow', source: 'big', flow: FAKE_FLOWS.summarise.id }] })).statusCode).toBe(201);
  fake.runAnswerBytes = 256 * 1024 * 1024;
  const { execution } = await runWorkflowToEnd(stack, 'big-answer');
  expect(execution.status).toBe('failed');
  expect(execution.tasks[0].error).toContain(`answered more than 16 MiB (HTTP 200); Armada reads at most that much of a platform's answer`);
  // the platform stopped being read soon after the limit (its writes are 64 KiB each, the socket buffers a few MiB)
  expect(fake.runAnswerWritten).toBeLessThan(MAX_PLATFORM_ANSWER_BYTES + 32 * 1024 * 1024);
}, 90_000);

describe('readBoundedText', () => {
  let server: http.Server;
  let base: string;
  let sent = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const total = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('bytes'));
      res.writeHead(200, { 'content-type': 'text/plain' });
      sent = 0;
      const block = Buffer.alloc(16 * 1024, 'é'); // two-byte characters, cut anywhere
      const write = () => {
        while (!res.destroyed && sent < total) {
          const piece = block.subarray(0, Math.min(block.length, total - sent));
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  test('an answer within the limit is read whole; one past it is cut at the limit and marked truncated', async () => {
    expect(await readBoundedText(await fetch(`${base}/?bytes=1000`), 1000)).toEqual({ text: 'é'.repeat(500), truncated: false });
    const cut = await readBoundedText(await fetch(`${base}/?bytes=${64 * 1024 * 1024}`), 1001);
    expect(cut.truncated).toBe(true);
    expect(Buffer.byteLength(cut.text)).toBeLessThanOrEqual(1001 + 2); // a character cut in two shows as U+FFFD
    expect(cut.text.startsWith('é'.repeat(500))).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(sent).toBeLessThan(16 * 1024 * 1024); // of 64 MiB: the rest was never asked for
  });
});
