/**
 * Another client that takes every free connection slot of a test's own PostgreSQL (so it refuses new connections with
 * 53300) and lets them go: the no-slot cases of postgresHalfBroken (the services) and probeNoConnectionSlot (the
 * dependency probe). `url` is read when the slots are taken, after the test's PostgreSQL has started.
 */
import { Client } from 'pg';

export function connectionSlots(url: () => string, applicationName: string) {
  const held: Client[] = [];
  return {
    /** the connections held now, oldest first (held[0] can ask PostgreSQL about the others) */
    held,
    /** Opens connections until PostgreSQL refuses one for want of a slot; how many it holds then. */
    async takeEveryFreeSlot(): Promise<number> {
      for (;;) {
        const c = new Client({ connectionString: url(), application_name: applicationName });
        c.on('error', () => undefined);
        try {
          await c.connect();
          held.push(c);
        } catch (err) {
          await c.end().catch(() => undefined);
          if ((err as { code?: unknown }).code === '53300') return held.length;
          throw err;
        }
      }
    },
    async letGo(): Promise<void> {
      await Promise.all(held.splice(0).map((c) => c.end().catch(() => undefined)));
    },
  };
}
