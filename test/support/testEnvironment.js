'use strict';
// jest's node environment (jest.config.js `testEnvironment`), plus one look at what keeps a jest worker alive at the
// end of a run. jest ends a run by telling each worker to end; a worker then exits once nothing holds its event loop,
// and one still running after `workerGracefulExitTimeout` is killed with "A worker process has failed to exit
// gracefully" (docs/testing.md, "Run time": seen at the end of about half the CI runs, its file never found, since
// the handle may come from any file that ran in that worker). So a worker that still runs 5 s after the end message
// names on stderr what holds it (timers, sockets, servers, child processes) and the files it ran, for the next CI log.
const fs = require('node:fs');
const path = require('node:path');
const { TestEnvironment } = require('jest-environment-node');

const WATCH = Symbol.for('armada.jestWorkerEndWatch');
/** jest-worker's message that ends a worker (CHILD_MESSAGE_END of jest-worker's build) */
const CHILD_MESSAGE_END = 2;
const LOOK_AFTER_MS = 5000;

/** One line for a handle that keeps the event loop alive: what it is and what it is for. */
function describeHandle(h) {
  const kind = h?.constructor?.name ?? typeof h;
  if (kind === 'Timeout') return `Timeout ${h._idleTimeout} ms${h._repeat ? ' (interval)' : ''} ${h._onTimeout?.name || '(anonymous)'}`;
  if (kind === 'ChildProcess') return `ChildProcess pid ${h.pid} ${h.spawnfile} ${(h.spawnargs ?? []).slice(1, 4).join(' ')}`;
  if ((kind === 'Socket' || kind === 'TLSSocket') && !h.remoteAddress && !h.localPort) return `${kind} (a pipe: a child's stdio, IPC)`;
  if (kind === 'Socket' || kind === 'TLSSocket') return `${kind} ${h.localAddress ?? ''}:${h.localPort ?? ''} -> ${h.remoteAddress ?? '(pipe)'}:${h.remotePort ?? ''}`;
  if (kind === 'Server') {
    const a = typeof h.address === 'function' ? h.address() : undefined;
    return `Server ${a && typeof a === 'object' ? `${a.address}:${a.port}` : (a ?? '')}`;
  }
  return kind;
}

function reportLeft(watch) {
  const stdio = new Set([process.stdin, process.stdout, process.stderr]);
  const held = process._getActiveHandles().filter((h) => !stdio.has(h) && (typeof h?.hasRef === 'function' ? h.hasRef() : true));
  // Node lists no timers among its handles: those the test files made are kept by timersOf
  const timers = [...watch.timers].filter(({ timer }) => !timer._destroyed && timer.hasRef());
  const lines = [
    `jest worker ${process.pid} still runs ${LOOK_AFTER_MS / 1000} s after the end of the run; what holds it:`,
    ...held.map((h) => `  ${describeHandle(h)}`),
    ...timers.map(({ timer, file }) => `  ${describeHandle(timer)}, made by ${file}`),
    `  resources: ${process.getActiveResourcesInfo().join(', ')}`,
    `  the files it ran, in order: ${watch.files.join(', ')}`,
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
}

function watchWorkerEnd(testPath) {
  if (!process.env.JEST_WORKER_ID || typeof process.send !== 'function') return undefined; // in band: no worker to end
  let watch = process[WATCH];
  if (!watch) {
    watch = { files: [], timers: new Set() };
    process[WATCH] = watch;
    const onMessage = (message) => {
      if (!Array.isArray(message) || message[0] !== CHILD_MESSAGE_END) return;
      // a 'message' listener keeps the IPC channel, and so the worker, alive: this one goes with jest-worker's own
      process.off('message', onMessage);
      setTimeout(() => reportLeft(watch), LOOK_AFTER_MS).unref();
    };
    process.on('message', onMessage);
  }
  watch.files.push(path.relative(process.cwd(), testPath));
  return watch;
}

/**
 * The test file's setTimeout and setInterval, keeping each timer they make (with the file's name) until it has run or
 * been cleared, so that a timer still pending at the end can be named. The timers themselves are Node's, unchanged.
 */
function timersOf(global, watch, file) {
  for (const name of ['setTimeout', 'setInterval']) {
    const original = global[name];
    if (typeof original !== 'function') continue;
    const kept = function (...args) {
      const timer = original.apply(this, args);
      if (watch.timers.size > 1000) for (const t of watch.timers) if (t.timer._destroyed) watch.timers.delete(t);
      if (timer && typeof timer.hasRef === 'function') watch.timers.add({ timer, file });
      return timer;
    };
    // util.promisify(setTimeout) and the like keep working
    Object.defineProperties(kept, Object.getOwnPropertyDescriptors(original));
    global[name] = kept;
  }
}

/**
 * With ARMADA_TEST_CPU_LOG=<file>, each test file appends one JSON line to it: its wall time, the CPU time its jest
 * process spent meanwhile (the test code, the in-process services and workers, module loading) and that of the child
 * processes it started and reaped meanwhile (`armada` processes, git, agents) — where a run's CPU goes, by file
 * (docs/testing.md, "Run time"). Children still running when the file ends are not counted.
 */
const CPU_LOG = process.env.ARMADA_TEST_CPU_LOG;

/** This process's CPU time and its reaped children's, in ms (Linux; children 0 elsewhere). */
function cpuNow() {
  const u = process.cpuUsage();
  let children = 0;
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    children = (Number(f[13]) + Number(f[14])) * 10; // cutime + cstime, in clock ticks of 10 ms
  } catch {
    // no /proc: children unknown
  }
  return { own: (u.user + u.system) / 1000, children };
}

class ArmadaTestEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.file = path.relative(process.cwd(), context.testPath);
    const watch = watchWorkerEnd(context.testPath);
    if (watch) timersOf(this.global, watch, this.file);
  }

  async setup() {
    if (CPU_LOG) this.began = { at: Date.now(), ...cpuNow() };
    await super.setup();
  }

  async teardown() {
    await super.teardown();
    if (!CPU_LOG || !this.began) return;
    const now = cpuNow();
    const s = (ms) => Math.round(ms) / 1000;
    const line = { file: this.file, wallS: s(Date.now() - this.began.at), ownCpuS: s(now.own - this.began.own), childrenCpuS: s(now.children - this.began.children) };
    fs.appendFileSync(CPU_LOG, `${JSON.stringify(line)}\n`);
  }
}

module.exports = ArmadaTestEnvironment;
