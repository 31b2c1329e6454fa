'use strict';
const fs = require('node:fs');
const net = require('node:net');

/** Whether `port` can be bound on 127.0.0.1 right now (0: any port; resolves with the port bound, or 0 if taken). */
function tryBind(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(0));
    srv.listen(port, '127.0.0.1', () => {
      const bound = srv.address().port;
      srv.close(() => resolve(bound));
    });
  });
}

/** The low end of the kernel's ephemeral range (outgoing connections take their local ports from it). */
function ephemeralLow() {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/**
 * A TCP port that was free a moment ago on 127.0.0.1, for a server a test starts a little later. Picked at random
 * below the ephemeral range: a port from listen(0) comes from that range, where any outgoing connection of the
 * machine's other tests (to PostgreSQL, Temporal, HTTP) can take it as its local port before the server binds it.
 */
async function freePort() {
  const high = Math.min(ephemeralLow(), 65536) - 1;
  const low = Math.max(10000, high - 15000);
  for (let i = 0; i < 50; i++) {
    const port = await tryBind(low + Math.floor(Math.random() * (high - low + 1)));
    if (port) return port;
  }
  return tryBind(0);
}

/**
 * Whether a server failed because a port picked by freePort was taken before it bound it (another test file got it
 * meanwhile): Node's EADDRINUSE, Go's (the Temporal dev server) "address already in use", PostgreSQL's "could not
 * create listen socket" / "could not create any TCP/IP sockets", and armada's own one-line answer for each of them
 * ("port N … is in use: stop what listens there, or set …": api/services.ts, lib/runtime/embeddedPostgres.ts,
 * lib/runtime/devServerFailure.ts), which is what `armada start` prints (a CI run's hangup test met it once).
 */
function portTakenMeanwhile(message) {
  return /EADDRINUSE|address already in use|could not create (any TCP\/IP sockets|listen socket)|port \d+ .*is in use\b/i.test(String(message));
}

/**
 * `start(tries)` (tries 1, 2, 3), again while it fails because a port it picked was taken meanwhile: each call picks
 * its ports afresh (freePort). Any other failure, or the third, is thrown.
 */
async function whilePortTaken(start) {
  for (let tries = 1; ; tries++) {
    try {
      return await start(tries);
    } catch (err) {
      if (tries === 3 || !portTakenMeanwhile(err?.message)) throw err;
    }
  }
}

module.exports = { freePort, portTakenMeanwhile, whilePortTaken };
