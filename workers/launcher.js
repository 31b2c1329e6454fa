'use strict';
// The process launcher (lib/process/launcher.ts): this small process starts the child processes of a large one (git
// commands, agents), because every spawn forks the calling process, and forking a worker or API process of a few
// hundred MB costs milliseconds of CPU and blocked event loop per spawn, against a fraction of one from here.
// Plain JS with no dependencies, so it starts fast and stays small. The process groups it started are the parent's to
// stop (it knows their pids), except when the parent goes away without stopping them (killed outright: kill -9, out
// of memory): then this process stops the groups whose leader still runs and the commands still running, then exits.
const { execFile, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');

// A group's CPU priority, as lib/process/priority.ts sets it: the leader's nice value and its session's autogroup.
function lowerPriority(pid, nice) {
  if (!pid || !nice) return;
  try {
    os.setPriority(pid, nice);
  } catch {
    /* gone already, or not permitted */
  }
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    /* no autogroup */
  }
}

/**
 * The groups started here whose leader still runs: pid → the grace between their SIGTERM and SIGKILL. When the parent
 * goes away they are the work of its activities, which nobody reads, records or stops any more: an agent would go on
 * editing its worktree (and spending its model's budget) until a retry elsewhere killed it, or for good when none came.
 * A group whose leader exited is left alone: its parent saw the exit and deals with what is left of it (a setup
 * script's service is kept on purpose).
 */
const running = new Map();
const DEFAULT_GRACE_MS = 3000;

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    /* gone */
  }
}

/**
 * The commands of `run` still running (pids). When the parent goes away they are the steps of its activities, which
 * nobody waits for any more, and the activity's retry (on another worker, or this host's next one) does the step again:
 * left running they raced it: a `git clone` went on, bound for the `<id>.partial` that the retry removes and clones
 * into (test/integration/projectCloneWorkerKill.test.ts).
 */
const commands = new Set();

/** The pids of `pid`'s descendants, from /proc (Linux; none elsewhere): a command's own children (git's helpers). */
function descendants(pid) {
  const found = [];
  const todo = [pid];
  while (todo.length) {
    const p = todo.pop();
    let tasks = [];
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      continue; // gone, or no /proc
    }
    for (const t of tasks) {
      let children = [];
      try {
        children = fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        /* gone meanwhile */
      }
      for (const c of children) {
        found.push(c);
        todo.push(c);
      }
    }
  }
  return found;
}

function signalPid(pid, signal) {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

/**
 * The parent is gone: SIGTERM to every group still led by its leader and to every command still running with its
 * descendants (git removes its lock files and a clone's half-made directory on SIGTERM), SIGKILL after the longest
 * grace, then exit.
 */
function stopGroupsAndExit() {
  if (!running.size && !commands.size) process.exit(0);
  const groups = [...running.keys()];
  const pids = [...commands].flatMap((pid) => [pid, ...descendants(pid)]);
  const grace = Math.max(...running.values(), ...(pids.length ? [DEFAULT_GRACE_MS] : []));
  for (const pid of groups) signalGroup(pid, 'SIGTERM');
  for (const pid of pids) signalPid(pid, 'SIGTERM');
  setTimeout(() => {
    for (const pid of groups) signalGroup(pid, 'SIGKILL');
    for (const pid of pids) signalPid(pid, 'SIGKILL');
    process.exit(0);
  }, grace);
}

function reply(r) {
  if (process.connected) process.send(r);
}

// Group events (output, ends, exits) leave in one message per turn of the event loop, in the order they happened,
// with consecutive output of one stream joined: 50 chatty agents write ~10,000 chunks a second, and one IPC
// message per chunk cost both this process and the parent a JSON message each (serialised, written, read, parsed).
// Nothing waits for a timer: the batch is sent as soon as the events that arrived together are handled.
let outbox = [];
function emit(e) {
  const last = outbox[outbox.length - 1];
  if (e.ev === 'data' && last && last.ev === 'data' && last.id === e.id && last.stream === e.stream) last.chunk += e.chunk;
  else outbox.push(e);
  if (outbox.length === 1) setImmediate(flushOutbox);
}
function flushOutbox() {
  const events = outbox;
  outbox = [];
  if (!events.length) return;
  reply(events.length === 1 ? events[0] : { ev: 'batch', events });
}

/** `run`: one command to completion, its output buffered (execFile). */
function run(m) {
  let child;
  try {
    child = execFile(m.file, m.args, { cwd: m.cwd, env: m.env, timeout: m.timeoutMs, maxBuffer: m.maxBuffer }, (err, stdout, stderr) => {
      if (child) commands.delete(child.pid);
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      reply({ id: m.id, code, stdout: String(stdout), stderr: String(stderr) });
    });
  } catch (err) {
    reply({ id: m.id, code: 1, stdout: '', stderr: err?.message ? err.message : String(err) });
    return;
  }
  if (child.pid) commands.add(child.pid);
  if (child.stdin) {
    child.stdin.on('error', () => undefined);
    if (typeof m.input === 'string') child.stdin.end(m.input);
  }
}

/**
 * `spawn`: a process in its own group (ev: spawned, exit, error). Its output: with `handOff`, its stdout and stderr pipes are
 * sent to the parent (ev: pipe, with the handle); otherwise streamed back as it comes (ev: data, end).
 */
function spawnGroup(m) {
  const id = m.id;
  let child;
  try {
    // no input: stdin is /dev/null (a pipe is a socket, and bash reads ~/.bashrc when its stdin is one)
    child = spawn(m.command, m.args, { cwd: m.cwd, env: m.env, detached: true, stdio: [typeof m.stdin === 'string' ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  } catch (err) {
    emit({ id, ev: 'error', message: err?.message ? err.message : String(err) });
    return;
  }
  child.once('error', (err) => emit({ id, ev: 'error', message: err.message }));
  lowerPriority(child.pid, m.nice);
  if (child.pid) {
    running.set(child.pid, typeof m.graceMs === 'number' ? m.graceMs : DEFAULT_GRACE_MS);
    emit({ id, ev: 'spawned', pid: child.pid });
  }
  if (child.stdin) {
    child.stdin.on('error', () => undefined); // a process that never reads stdin
    child.stdin.end(m.stdin);
  }
  for (const stream of ['stdout', 'stderr']) {
    const s = child[stream];
    if (m.handOff && s._handle && typeof s._handle.readStop === 'function') {
      // the pipe itself goes to the parent, which reads the output directly: no copy of every chunk through this
      // process and the IPC channel. Reading stops first (Node starts it when it creates the socket): bytes this
      // process read before the handle left would be lost, as they would sit in this process's buffer.
      s._handle.readStop();
      process.send({ id, ev: 'pipe', stream }, s);
      continue;
    }
    s.setEncoding('utf8'); // a multi-byte character split between chunks stays whole
    s.on('data', (chunk) => emit({ id, ev: 'data', stream, chunk }));
    s.once('close', () => emit({ id, ev: 'end', stream }));
  }
  child.once('exit', (code, signal) => {
    running.delete(child.pid);
    emit({ id, ev: 'exit', code, signal });
  });
}

process.on('message', (m) => {
  if (!m) return;
  if (m.op === 'run') run(m);
  else if (m.op === 'spawn') spawnGroup(m);
});

process.on('disconnect', stopGroupsAndExit);
