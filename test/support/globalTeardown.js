'use strict';
const fs = require('node:fs');

module.exports = async function globalTeardown() {
  const infra = globalThis.__ARMADA_INFRA__;
  if (!infra) return;
  await new Promise((resolve) => {
    if (infra.child.exitCode !== null) return resolve();
    const timer = setTimeout(() => infra.child.kill('SIGKILL'), 20_000);
    infra.child.on('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    infra.child.kill('SIGTERM');
  });
  fs.rmSync(infra.home, { recursive: true, force: true });
};
