'use strict';
// The process launcher (lib/process/launcher.ts): this small process starts the short-lived child processes of a
// large one (git), because every spawn forks the calling process, and forking a worker or API process of a few
// hundred MB costs milliseconds of CPU and blocked event loop per spawn, against a fraction of one from here.
// Plain JS with no dependencies, so it starts fast and stays small. It exits when its parent goes away.
const { execFile } = require('node:child_process');

process.on('message', (m) => {
  if (!m || m.op !== 'run') return;
  let child;
  try {
    child = execFile(m.file, m.args, { cwd: m.cwd, env: m.env, timeout: m.timeoutMs, maxBuffer: m.maxBuffer }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      reply({ id: m.id, code, stdout: String(stdout), stderr: String(stderr) });
    });
  } catch (err) {
    reply({ id: m.id, code: 1, stdout: '', stderr: err && err.message ? err.message : String(err) });
    return;
  }
  if (child.stdin) {
    child.stdin.on('error', () => undefined);
    if (typeof m.input === 'string') child.stdin.end(m.input);
  }
});

function reply(r) {
  if (process.connected) process.send(r);
}

process.on('disconnect', () => process.exit(0));
