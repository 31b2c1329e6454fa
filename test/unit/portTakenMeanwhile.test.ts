/**
 * test/support/ports.js's portTakenMeanwhile: the test helpers that start `armada start` (armadaStart.ts, provision)
 * try again with new ports when a port freePort picked was taken before the server bound it. armada prints its own
 * one-line answer for that, which the matcher missed: a CI run's hangup test failed on "port … (the agents service) is
 * in use" instead of trying again.
 */
const { portTakenMeanwhile } = require('../support/ports') as { portTakenMeanwhile(message: string): boolean };

test.each([
  'armada: port 26638 on 127.0.0.1 (the agents service) is in use: stop what listens there, or set ARMADA_AGENTS_PORT to a free port',
  'embedded postgres did not start: port 25001 is in use (could not create any TCP/IP sockets); stop what listens there, or set ARMADA_PG_PORT to a free port',
  'temporal dev server did not start: port 27233 on 127.0.0.1 is in use: stop what listens there, or set ARMADA_TEMPORAL_PORT to a free port',
  'Error: listen EADDRINUSE: address already in use 127.0.0.1:20001',
])('a port taken meanwhile: %s', (message) => {
  expect(portTakenMeanwhile(message)).toBe(true);
});

test.each([
  'armada: ARMADA_HOME /tmp/x is in use by a running armada (pid 12: armada start); stop it first, or set DATABASE_URL and TEMPORAL_ADDRESS to use its servers',
  'embedded postgres did not start: initdb failed',
])('anything else is not: %s', (message) => {
  expect(portTakenMeanwhile(message)).toBe(false);
});
