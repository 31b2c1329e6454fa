/** The supervisor of `armada start`'s servers, with real child processes that exit. */
import { spawn } from 'node:child_process';
import { createLogger } from '../../lib/logger';
import { backoffMs, supervise, type ChildServer, type RestartPolicy } from '../../lib/runtime/supervisor';

const logger = createLogger('silent');

/** A real child process running `code` under node. */
function child(code: string): ChildServer & { kill(): void } {
  const c = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  const exited = new Promise<string>((resolve) => c.once('exit', (status, signal) => resolve(`exited (code ${status}, signal ${signal})`)));
  return { pid: c.pid ?? 0, exited, kill: () => c.kill('SIGKILL') };
}
const exitsAtOnce = () => child('process.exit(3)');
const runsLong = () => child('setTimeout(() => {}, 60000)');

test('backoff doubles from the initial delay and is capped', () => {
  const policy: RestartPolicy = { maxFailures: 10, windowMs: 60_000, initialBackoffMs: 500, maxBackoffMs: 3000 };
  expect([1, 2, 3, 4, 5].map((n) => backoffMs(policy, n))).toEqual([500, 1000, 2000, 3000, 3000]);
});

test('a dead server is restarted after a growing backoff; once the budget is spent it gives up with one line naming it', async () => {
  const policy: RestartPolicy = { maxFailures: 3, windowMs: 60_000, initialBackoffMs: 200, maxBackoffMs: 5000 };
  const restarts: number[] = [];
  const events: string[] = [];
  const t0 = Date.now();
  const message = await new Promise<string>((resolve) => {
    supervise(exitsAtOnce(), {
      name: 'postgres',
      policy,
      logger,
      restart: async () => {
        restarts.push(Date.now() - t0);
        return exitsAtOnce();
      },
      onDown: () => events.push('down'),
      onUp: () => events.push('up'),
      onGiveUp: resolve,
    });
  });
  expect(restarts).toHaveLength(2); // death 1 → restart, death 2 → restart, death 3 → give up
  expect(restarts[0]).toBeGreaterThanOrEqual(200);
  expect(restarts[1] - restarts[0]).toBeGreaterThanOrEqual(400); // 200, then 400
  expect(events).toEqual(['down', 'up', 'down', 'up', 'down']);
  expect(message).toMatch(/^postgres failed 3 times within 60 s \(last: exited \(code 3, signal null\)\); giving up$/);
  expect(message).not.toContain('\n');
});

test('a restart that fails counts against the budget and is retried', async () => {
  const policy: RestartPolicy = { maxFailures: 5, windowMs: 60_000, initialBackoffMs: 50, maxBackoffMs: 200 };
  let calls = 0;
  let restarted: (ChildServer & { kill(): void }) | undefined;
  let gaveUp = false;
  let supervisor: { stop(): Promise<void> } | undefined;
  await new Promise<void>((resolve) => {
    supervisor = supervise(exitsAtOnce(), {
      name: 'temporal',
      policy,
      logger,
      restart: async () => {
        calls++;
        if (calls < 3) throw new Error('port in use\nmore detail');
        restarted = runsLong();
        return restarted;
      },
      onUp: resolve,
      onGiveUp: () => {
        gaveUp = true;
      },
    });
  });
  expect(calls).toBe(3);
  expect(gaveUp).toBe(false);
  await supervisor?.stop();
  restarted?.kill();
});

test('after stop() a server that dies is not restarted', async () => {
  const server = runsLong();
  let restarts = 0;
  const supervisor = supervise(server, {
    name: 'postgres',
    policy: { maxFailures: 5, windowMs: 60_000, initialBackoffMs: 10, maxBackoffMs: 10 },
    logger,
    restart: async () => {
      restarts++;
      return runsLong();
    },
    onGiveUp: () => undefined,
  });
  await supervisor.stop();
  server.kill();
  await server.exited;
  await new Promise((r) => setTimeout(r, 200));
  expect(restarts).toBe(0);
});

test('stop() during a restart that is still starting returns at once; a restart that resolves afterwards is not reported up', async () => {
  const first = exitsAtOnce();
  let release: (server: ChildServer) => void = () => undefined;
  let restartBegan: () => void = () => undefined;
  const began = new Promise<void>((r) => (restartBegan = r));
  const events: string[] = [];
  const supervisor = supervise(first, {
    name: 'temporal',
    policy: { maxFailures: 5, windowMs: 60_000, initialBackoffMs: 10, maxBackoffMs: 10 },
    logger,
    restart: () =>
      new Promise<ChildServer>((resolve) => {
        release = resolve; // a dev server waiting up to 60 s for readiness: its owner's stop ends it
        restartBegan();
      }),
    onDown: () => events.push('down'),
    onUp: () => events.push('up'),
    onGiveUp: () => events.push('gave up'),
  });
  await began;
  const t0 = Date.now();
  await supervisor.stop();
  expect(Date.now() - t0).toBeLessThan(100);
  const late = runsLong();
  release(late);
  await new Promise((r) => setTimeout(r, 100));
  expect(events).toEqual(['down']);
  late.kill();
});
