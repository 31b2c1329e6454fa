import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AGENT_TASK_ACTIVITY_TIMEOUT_MS, MAX_AGENT_TASK_TIMEOUT_MS } from '../../lib/agents/agentTaskTimeout';
import { CONFIG_FILE_MAX_BYTES, ConfigError, loadConfig, MAX_RETENTION_DAYS, MAX_TEMPORAL_DURATION_MS, MAX_TIMER_MS, parseFileConfig } from '../../lib/config';

describe('config', () => {
  test('unknown keys are an error naming the key path', () => {
    expect(() => parseFileConfig({ agents: { claude: { command: ['claude'], comand: 'x' } } }, 'config.json')).toThrow('unknown key "agents.claude.comand"');
    expect(() => parseFileConfig({ brnachPrefix: 'x' }, 'config.json')).toThrow('unknown key "brnachPrefix"');
  });
  test('wrong types and missing keys name the key', () => {
    expect(() => parseFileConfig({ agents: { a: {} } }, 'c.json')).toThrow('missing key "agents.a.command"');
    // an output format nobody reads used to fall back to plain text without a word
    expect(() => parseFileConfig({ agents: { a: { command: ['a'], format: 'claude-stream-jsno' } } }, 'c.json')).toThrow(
      '"agents.a.format" must be one of "text", "claude-stream-json", "stream-json", "codex-json", "gemini-stream-json", "opencode-json"',
    );
    for (const format of ['text', 'stream-json', 'opencode-json']) expect(parseFileConfig({ agents: { a: { command: ['a'], format } } }, 'c.json').agents?.a?.format).toBe(format);
    expect(() => parseFileConfig({ webhooks: { timeoutMs: 'soon' } }, 'c.json')).toThrow(/"webhooks.timeoutMs"/);
    // a delivery try has 2 minutes (its activity's start-to-close timeout): with a longer request timeout, Temporal
    // timed the try out and started the next while the first was still waiting for the receiver
    expect(() => parseFileConfig({ webhooks: { timeoutMs: 120_000 } }, 'c.json')).toThrow(/"webhooks.timeoutMs"/);
    expect(parseFileConfig({ webhooks: { timeoutMs: 100_000 } }, 'c.json').webhooks?.timeoutMs).toBe(100_000);
    expect(() => parseFileConfig({ attempts: { janitorIntervalMs: -1 } }, 'c.json')).toThrow(/"attempts.janitorIntervalMs"/);
    expect(() => parseFileConfig({ attempts: { janitorIntervalMs: 2 ** 31 } }, 'c.json')).toThrow(/"attempts.janitorIntervalMs"/); // beyond setTimeout's range
    expect(parseFileConfig({ attempts: { janitorIntervalMs: 0 } }, 'c.json').attempts?.janitorIntervalMs).toBe(0);
    expect(() => parseFileConfig({ processes: { nice: 20 } }, 'c.json')).toThrow(/"processes.nice"/); // 19 is the lowest priority
    expect(() => parseFileConfig({ processes: { nice: -5 } }, 'c.json')).toThrow(/"processes.nice"/); // raising needs privileges
    expect(parseFileConfig({ processes: { nice: 0 } }, 'c.json').processes?.nice).toBe(0);
    // the read cache and worktree-read keys
    expect(() => parseFileConfig({ taskReadCache: { maxEntries: 0 } }, 'c.json')).toThrow(/"taskReadCache.maxEntries"/);
    expect(() => parseFileConfig({ taskReadCache: { enabled: 'no' } }, 'c.json')).toThrow(/"taskReadCache.enabled"/);
    expect(() => parseFileConfig({ taskReadCache: { ttl: 5 } }, 'c.json')).toThrow('unknown key "taskReadCache.ttl"');
    expect(() => parseFileConfig({ attempts: { worktreeReads: 'sometimes' } }, 'c.json')).toThrow(/"attempts.worktreeReads"/);
    expect(() => parseFileConfig({ attempts: { hostReadTimeoutMs: 10 } }, 'c.json')).toThrow(/"attempts.hostReadTimeoutMs"/);
    expect(() => parseFileConfig({ attempts: { deleteWaitMs: -1 } }, 'c.json')).toThrow(/"attempts.deleteWaitMs"/);
    // start and continue-as-new keys
    expect(() => parseFileConfig({ attempts: { startTimeoutMs: 10 } }, 'c.json')).toThrow(/"attempts.startTimeoutMs"/);
    expect(() => parseFileConfig({ attempts: { startReconcileAfterMs: -1 } }, 'c.json')).toThrow(/"attempts.startReconcileAfterMs"/);
    expect(() => parseFileConfig({ attempts: { continueAsNewEvery: 0 } }, 'c.json')).toThrow(/"attempts.continueAsNewEvery"/);
    // filesystem walk bounds
    expect(() => parseFileConfig({ filesystem: { concurrentWalks: 0 } }, 'c.json')).toThrow(/"filesystem.concurrentWalks"/);
    expect(() => parseFileConfig({ filesystem: { walkTimeBudgetMs: 5 } }, 'c.json')).toThrow(/"filesystem.walkTimeBudgetMs"/);
    expect(() => parseFileConfig({ filesystem: { walkMaxEntries: 'many' } }, 'c.json')).toThrow(/"filesystem.walkMaxEntries"/);
    expect(() => parseFileConfig({ filesystem: { queuedWalks: -1 } }, 'c.json')).toThrow(/"filesystem.queuedWalks"/);
    // users[].admin: a boolean that lets a key name another user with X-User-Email
    expect(parseFileConfig({ users: [{ email: 'a@example.com', apiKey: 'key-0123456789', admin: true }] }, 'c.json').users?.[0]?.admin).toBe(true);
    expect(() => parseFileConfig({ users: [{ email: 'a@example.com', apiKey: 'key-0123456789', admin: 'yes' }] }, 'c.json')).toThrow(/"users.0.admin"/);
    expect(() => parseFileConfig({ users: [{ email: 'a@example.com', apiKey: 'key-0123456789', role: 'admin' }] }, 'c.json')).toThrow('unknown key "users.0.role"');
  });
  test('defaults without a file; env ports, keys and home; bad values refused', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cfg-'));
    const c = loadConfig({ ARMADA_HOME: home, ARMADA_TASK_PORT: '9999', ARMADA_SCHEDULER_ALT_PORT: '' });
    expect(c.home).toBe(home);
    expect(c.ports).toMatchObject({ task: 9999, scheduler: 8883, schedulerAlt: null, agents: 8001, traces: 8000 });
    expect(c.branchPrefix).toBe('armada');
    // a prefix git would refuse as the start of a branch name is refused here, not at the first attempt
    for (const bad of ['-x', 'a..b', '.x', 'team/.x', 'x.lock', 'x.lock/y', 'x.', 'a//b', 'a b']) expect(() => parseFileConfig({ branchPrefix: bad }, 'c.json')).toThrow(/"branchPrefix"/);
    for (const good of ['armada', 'team/armada', 'v1.2', 'a-b_c', 'x.locked']) expect(parseFileConfig({ branchPrefix: good }, 'c.json').branchPrefix).toBe(good);
    expect(c.filesystemWalks).toEqual({ timeBudgetMs: 10_000, maxEntries: 50_000, concurrency: 2, queue: 16 });
    expect(c.sseKeepAliveMs).toBe(15_000);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_SSE_KEEPALIVE_MS: '0' })).toThrow(/ARMADA_SSE_KEEPALIVE_MS/);
    // the API's database limits: 5 s, 30 s and 30 s by default, 0 = none of Armada's, anything but a whole number ≥ 0 refused
    expect(c.apiDatabaseLimits).toEqual({ lockTimeoutMs: 5000, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 30_000 });
    expect(
      loadConfig({ ARMADA_HOME: home, ARMADA_API_LOCK_TIMEOUT_MS: '0', ARMADA_API_STATEMENT_TIMEOUT_MS: '120000', ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0' }).apiDatabaseLimits,
    ).toEqual({ lockTimeoutMs: 0, statementTimeoutMs: 120_000, idleInTransactionTimeoutMs: 0 });
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS: '30 s' })).toThrow(/ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS/);
    // the bound of the Temporal calls a request makes inside its transaction: 10 s, at least 100 ms (no "none")
    expect(c.temporalInTransactionMs).toBe(10_000);
    expect(loadConfig({ ARMADA_HOME: home, ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS: '2000' }).temporalInTransactionMs).toBe(2000);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS: '0' })).toThrow(/ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS/);
    // the workers' pool: one connect wait for `armada worker` and `armada start`'s workers (60 s), its idle limit (30 s)
    expect(c.workerDatabase).toEqual({ connectTimeoutMs: 60_000, idleInTransactionTimeoutMs: 30_000 });
    expect(loadConfig({ ARMADA_HOME: home, ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS: '15000', ARMADA_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0' }).workerDatabase).toEqual({
      connectTimeoutMs: 15_000,
      idleInTransactionTimeoutMs: 0,
    });
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS: '0' })).toThrow(/ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS/);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_API_LOCK_TIMEOUT_MS: '5s' })).toThrow(/ARMADA_API_LOCK_TIMEOUT_MS/);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_API_STATEMENT_TIMEOUT_MS: '-1' })).toThrow(/ARMADA_API_STATEMENT_TIMEOUT_MS/);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_TASK_PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_LOG_LEVEL: 'loud' })).toThrow(ConfigError);
    fs.writeFileSync(path.join(home, 'config.json'), '{ not json');
    expect(() => loadConfig({ ARMADA_HOME: home })).toThrow(/not valid JSON/);
  });
  // outside round eight: hostile config files and numbers past what a timer holds
  test('a config path that is no regular file, or too large a file, is one line naming it, never read whole', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cfg-'));
    const config = (name: string) => ({ ARMADA_HOME: home, ARMADA_CONFIG: path.join(home, name) });
    // a symlink to /dev/zero was read until the heap ran out (the test process died)
    fs.symlinkSync('/dev/zero', path.join(home, 'zero.json'));
    expect(() => loadConfig(config('zero.json'))).toThrow(new ConfigError(`${path.join(home, 'zero.json')}: it is a character device, not a file; point ARMADA_CONFIG at a JSON file (docs/configuration.md)`));
    // a FIFO nobody writes to hung the command in its open
    execFileSync('mkfifo', [path.join(home, 'fifo.json')]);
    expect(() => loadConfig(config('fifo.json'))).toThrow(/fifo\.json: it is a FIFO \(named pipe\), not a file/);
    fs.mkdirSync(path.join(home, 'dir.json'));
    expect(() => loadConfig(config('dir.json'))).toThrow(/dir\.json: it is a directory, not a file/);
    // 10 MB of valid JSON: refused by its size, not parsed
    fs.writeFileSync(path.join(home, 'big.json'), JSON.stringify({ branchPrefix: 'armada', pad: 'x'.repeat(10 * 1024 * 1024) }));
    expect(() => loadConfig(config('big.json'))).toThrow(new ConfigError(`${path.join(home, 'big.json')}: larger than a config file may be (${CONFIG_FILE_MAX_BYTES} bytes)`));
    // what held: __proto__ is an unknown key like any other, not a prototype
    fs.writeFileSync(path.join(home, 'proto.json'), '{"__proto__": {"branchPrefix": "x"}}');
    expect(() => loadConfig(config('proto.json'))).toThrow('unknown key "__proto__"');
    // a number past a double's range parsed as Infinity, which passed the integer check of a key with no maximum
    fs.writeFileSync(path.join(home, 'huge.json'), '{"codehost": {"pollIntervalMs": 1e400}}');
    expect(() => loadConfig(config('huge.json'))).toThrow(new ConfigError(`${path.join(home, 'huge.json')}: "pollIntervalMs" is a number too large to hold`));
    fs.writeFileSync(path.join(home, 'ok.json'), '{"branchPrefix": "team"}');
    fs.symlinkSync(path.join(home, 'ok.json'), path.join(home, 'link.json'));
    expect(loadConfig(config('link.json')).branchPrefix).toBe('team'); // a symlink to a file is fine
  });
  test('durations past what a timer holds are refused, not wrapped round to 1 ms', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cfg-'));
    // ARMADA_SSE_KEEPALIVE_MS=3000000000 wrote a keep-alive every millisecond (setInterval's overflow)
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_SSE_KEEPALIVE_MS: '3000000000' })).toThrow(
      new ConfigError(`ARMADA_SSE_KEEPALIVE_MS: "3000000000" is not an integer from 1 to ${MAX_TIMER_MS}`),
    );
    expect(loadConfig({ ARMADA_HOME: home, ARMADA_SSE_KEEPALIVE_MS: String(MAX_TIMER_MS) }).sseKeepAliveMs).toBe(MAX_TIMER_MS);
    for (const name of ['ARMADA_REQUEST_TIMEOUT_MS', 'ARMADA_API_STATEMENT_TIMEOUT_MS', 'ARMADA_API_IDLE_IN_TRANSACTION_TIMEOUT_MS', 'ARMADA_API_TEMPORAL_IN_TRANSACTION_TIMEOUT_MS', 'ARMADA_WORKER_DB_CONNECT_TIMEOUT_MS', 'ARMADA_WORKER_IDLE_IN_TRANSACTION_TIMEOUT_MS']) {
      expect(() => loadConfig({ ARMADA_HOME: home, [name]: String(MAX_TIMER_MS + 1) })).toThrow(new RegExp(`^${name}: .* is not an integer from \\d+ to ${MAX_TIMER_MS}$`));
    }
    // a transaction waits up to twice the lock timeout for its connection, in one timer
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_API_LOCK_TIMEOUT_MS: '1073741824' })).toThrow(/ARMADA_API_LOCK_TIMEOUT_MS: "1073741824" is not an integer from 0 to 1073741823/);
    expect(loadConfig({ ARMADA_HOME: home, ARMADA_API_LOCK_TIMEOUT_MS: '1073741823' }).apiDatabaseLimits.lockTimeoutMs).toBe(1_073_741_823);
    // armada start gives its workers the grace plus 5 s
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_SHUTDOWN_GRACE_SECONDS: '2147479' })).toThrow(/ARMADA_SHUTDOWN_GRACE_SECONDS/);
    expect(loadConfig({ ARMADA_HOME: home, ARMADA_SHUTDOWN_GRACE_SECONDS: '2147478' }).shutdownGraceMs + 5000).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(() => loadConfig({ ARMADA_HOME: home, ARMADA_RESTART_WINDOW_SECONDS: '1e12' })).toThrow(/ARMADA_RESTART_WINDOW_SECONDS/);
    // in the file: the keys that reach a Node timer (AbortSignal.timeout refused above 2^32 - 1 outright)
    expect(() => parseFileConfig({ scheduler: { sourceTimeoutMs: 3_000_000_000 } }, 'c.json')).toThrow(/"scheduler.sourceTimeoutMs"/);
    expect(() => parseFileConfig({ scheduler: { scriptTimeoutSeconds: 2_147_484 } }, 'c.json')).toThrow(/"scheduler.scriptTimeoutSeconds"/);
    expect(() => parseFileConfig({ attempts: { killGraceMs: 2 ** 31 } }, 'c.json')).toThrow(/"attempts.killGraceMs"/);
    expect(parseFileConfig({ scheduler: { sourceTimeoutMs: MAX_TIMER_MS, scriptTimeoutSeconds: 2_147_483 }, attempts: { killGraceMs: MAX_TIMER_MS } }, 'c.json').attempts?.killGraceMs).toBe(MAX_TIMER_MS);
  });
  test('durations only Temporal acts on are bounded by a year, retentionDays by 100 years, multiAgent.taskTimeoutMs by its activity: the error names the file, the key and the bound', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-cfg-'));
    const file = path.join(home, 'config.json');
    const load = (config: unknown) => {
      fs.writeFileSync(file, JSON.stringify(config));
      return loadConfig({ ARMADA_HOME: home });
    };
    expect(MAX_TEMPORAL_DURATION_MS).toBe(365 * 86_400_000);
    expect(MAX_AGENT_TASK_TIMEOUT_MS).toBe(84_900_000);
    expect(AGENT_TASK_ACTIVITY_TIMEOUT_MS - MAX_AGENT_TASK_TIMEOUT_MS).toBe(25 * 60_000);
    const year = MAX_TEMPORAL_DURATION_MS;
    const cases: [string, string, number][] = [
      ['attempts', 'heartbeatTimeoutMs', year],
      ['attempts', 'idleTimeoutMs', year],
      ['codehost', 'pollIntervalMs', year],
      ['scheduler', 'catchupWindowSeconds', year / 1000],
      ['scheduler', 'healthCheckIntervalSeconds', year / 1000],
      ['attempts', 'defaultTimeoutSec', 2_592_000], // as an attempt's options.timeout (30 days)
      ['scheduler', 'retentionDays', MAX_RETENTION_DAYS],
      // what runAgentTask's 24 h start-to-close timeout leaves: a longer value never took effect
      ['multiAgent', 'taskTimeoutMs', MAX_AGENT_TASK_TIMEOUT_MS],
    ];
    for (const [section, key, max] of cases) {
      // 1e300 as well: past anything a Duration, a Date or a PostgreSQL timestamp holds, and no longer taken
      for (const over of [max + 1, 1e300]) {
        expect(() => load({ [section]: { [key]: over } })).toThrow(new ConfigError(`${file}: "${section}.${key}" must be <= ${max}`));
      }
      expect((load({ [section]: { [key]: max } }).file as Record<string, Record<string, number>>)[section]?.[key]).toBe(max);
    }
    expect(load({ scheduler: { retentionDays: 0.5 } }).file.scheduler?.retentionDays).toBe(0.5); // a fraction of a day is fine
  });
});
