/** Closing a node-postgres client without waiting on the server. */
import type { Socket } from 'node:net';

/** The socket of a node-postgres client (undefined before it has one). */
export const socketOf = (client: object): Socket | undefined => (client as { connection?: { stream?: Socket } }).connection?.stream;

/**
 * Ends `client` and destroys its socket at once. A client's own `end()` sends a goodbye and waits for the server to
 * close: a frozen or unreachable server never does, and the socket stayed open in this process for as long.
 */
export function closeAtOnce(client: { end(): Promise<void> }): void {
  client.end().catch(() => undefined);
  socketOf(client)?.destroy();
}
