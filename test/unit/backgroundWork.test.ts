/** Work a request starts and does not wait for (lib/runtime/background.ts): after the answer, tracked, failures logged. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBackgroundWork } from '../../lib/runtime/background';

function recordingLogger() {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? '') } as never };
}

test("the work starts after the answer the request writes: the client has the answer's bytes before the work's first step", async () => {
  const { logger } = recordingLogger();
  const background = createBackgroundWork(logger);
  const order: string[] = [];
  const server = http.createServer((_req, res) => {
    background.run('confirming', async () => {
      order.push(`work started (answer finished: ${res.writableFinished})`);
    });
    res.end('answer');
    order.push('answer written');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const body = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)).text();
    await background.settle();
    expect(body).toBe('answer');
    expect(order).toEqual(['answer written', 'work started (answer finished: true)']);
  } finally {
    server.close();
  }
});

test('settle waits for work started but not yet begun, and for work still running', async () => {
  const { logger } = recordingLogger();
  const background = createBackgroundWork(logger);
  const done: string[] = [];
  background.run('slow', () => new Promise((r) => setTimeout(() => r(void done.push('slow')), 50)));
  background.run('quick', async () => void done.push('quick'));
  await background.settle();
  expect(done.sort()).toEqual(['quick', 'slow']);
});

test('a failure is logged naming the work, and does not reach the caller', async () => {
  const { logger, warnings } = recordingLogger();
  const background = createBackgroundWork(logger);
  background.run('confirming an attempt start', async () => {
    throw new Error('connection terminated');
  });
  background.run('a synchronous throw', () => {
    throw new Error('thrown before any await');
  });
  await background.settle();
  expect(warnings.sort()).toEqual(['a synchronous throw failed; it is finished later', 'confirming an attempt start failed; it is finished later']);
});
