'use strict';

/**
 * Stops the run's `armada infra` (globalSetup's child): SIGTERM, so it stops its PostgreSQL and Temporal servers
 * itself, and SIGKILL after 20 s. Resolves when it has exited.
 */
function stopInfraProcess(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

module.exports = { stopInfraProcess };
