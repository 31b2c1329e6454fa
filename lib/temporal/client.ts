/** The Temporal client of a process, connected lazily so an API can start (and answer /health) before Temporal is up. */
import { Client, Connection } from '@temporalio/client';

export interface TemporalHandle {
  /** Connects on first use; later calls share the connection. */
  client(): Promise<Client>;
  close(): Promise<void>;
}

export function createTemporalHandle(address: string, namespace: string): TemporalHandle {
  let pending: Promise<{ connection: Connection; client: Client }> | undefined;
  const connect = async (): Promise<{ connection: Connection; client: Client }> => {
    const connection = await Connection.connect({ address, connectTimeout: 10_000 });
    return { connection, client: new Client({ connection, namespace }) };
  };
  return {
    async client() {
      if (!pending) {
        pending = connect();
        pending.catch(() => {
          pending = undefined; // retry the connection on the next call
        });
      }
      return (await pending).client;
    },
    async close() {
      if (!pending) return;
      try {
        (await pending).connection.close();
      } catch {
        /* never connected */
      }
      pending = undefined;
    },
  };
}
