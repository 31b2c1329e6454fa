/**
 * Turning a test's own PostgreSQL read-only and back, as an administrator would on a standby or a full disk
 * (`default_transaction_read_only`, then a configuration reload): shared by the read-only tests of the API
 * (postgresHalfBroken) and of the worker (workerReadOnly).
 */
import { Client } from 'pg';
import { eventually } from './harness';

/** Runs `sql` on a session of its own that may write whatever the server's default (an administrator's), then reloads. */
export async function asAdministrator(url: string, sql: string): Promise<void> {
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query('SET default_transaction_read_only = off');
    await admin.query(sql);
    await admin.query('SELECT pg_reload_conf()');
  } finally {
    await admin.end();
  }
}

/** Once a new session has `default_transaction_read_only` so, the server has told every session to reload its configuration. */
export async function untilNewSessionsAre(url: string, readOnly: 'on' | 'off'): Promise<void> {
  await eventually(async () => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query<{ default_transaction_read_only: string }>('SHOW default_transaction_read_only')).rows[0]?.default_transaction_read_only === readOnly;
    } finally {
      await c.end();
    }
  }, 30_000, 200);
}
