/** The bind rule: a non-loopback ARMADA_HOST needs a task key or `users`; `armada start` / `armada api` refuse otherwise. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assertTaskServiceBindAllowed, isLoopbackHost } from '../../lib/config';
import { testConfigFrom } from '../support/unitConfig';
import { ARMADA_BIN as BIN } from '../support/armadaProcess';


test('loopback is 127.0.0.0/8, ::1 and localhost; anything else is not', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) expect([h, isLoopbackHost(h)]).toEqual([h, true]);
  for (const h of ['0.0.0.0', '::', '10.0.0.5', '128.0.0.1', 'example.com', '::2', '']) expect([h, isLoopbackHost(h)]).toEqual([h, false]);
});

test('a non-loopback host passes with ARMADA_TASK_API_KEY or users, and not without', () => {
  const open = { ...testConfigFrom({}), host: '0.0.0.0' };
  expect(() => assertTaskServiceBindAllowed(open)).toThrow(/^ARMADA_HOST=0\.0\.0\.0 is not a loopback address .*ARMADA_TASK_API_KEY/);
  expect(() => assertTaskServiceBindAllowed({ ...open, apiKeys: { task: 'k'.repeat(16) } })).not.toThrow();
  expect(() => assertTaskServiceBindAllowed({ ...testConfigFrom({ users: [{ email: 'a@example.com', apiKey: 'user-key-123' }] }), host: '0.0.0.0' })).not.toThrow();
  expect(() => assertTaskServiceBindAllowed({ ...open, host: '127.0.0.1' })).not.toThrow();
});

describe('the CLI', () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bind-'));
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));
  /** An environment without any key of the surrounding shell. */
  const env = (extra: Record<string, string>) => {
    const e: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!/^(ARMADA_|DATABASE_URL$|TEMPORAL_ADDRESS$)/.test(k)) e[k] = v;
    return { ...e, ARMADA_HOME: home, ...extra };
  };
  const run = (args: string[], extra: Record<string, string>) => spawnSync(process.execPath, [BIN, ...args], { env: env(extra), encoding: 'utf8', timeout: 30_000 });

  test('`armada start` with ARMADA_HOST=0.0.0.0 and no key refuses in one line, exit 1, starting nothing', () => {
    const r = run(['start'], { ARMADA_HOST: '0.0.0.0' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^armada: ARMADA_HOST=0\.0\.0\.0 is not a loopback address .*ARMADA_TASK_API_KEY or "users"/);
    expect(fs.existsSync(path.join(home, 'pg'))).toBe(false); // refused before embedded PostgreSQL was started
  });

  test('`armada api` refuses the same when it serves the task service, not for the other services alone', () => {
    const all = run(['api'], { ARMADA_HOST: '0.0.0.0', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(all.status).toBe(1);
    expect(all.stderr).toMatch(/^armada: ARMADA_HOST=0\.0\.0\.0 is not a loopback address/);
    expect(all.stderr.trimEnd().split('\n')).toHaveLength(1);
    const task = run(['api', '--service', 'task'], { ARMADA_HOST: '::' });
    expect(task.stderr).toMatch(/^armada: ARMADA_HOST=:: is not a loopback address/);
    const scheduler = run(['api', '--service', 'scheduler'], { ARMADA_HOST: '0.0.0.0' });
    expect(scheduler.stderr).toMatch(/^armada: DATABASE_URL is required/); // past the bind rule
  });
});
