/**
 * A burst of trace ingestion (2,000 POSTs from 20 clients, each message once) into `armada api --service traces` while
 * its PostgreSQL (a server of this file's own, test/support/ownPostgres.ts) is stopped (a fast shutdown) and started
 * again on the same data (docs/traces.md; docs/operations.md). Checked on the rows: every request answered 2xx is
 * stored, exactly once; every other answer is the 503 `{detail}` with Retry-After (never a 500, never a hang); the
 * same process serves again by itself, and the messages refused are taken when sent again (201, or 200 naming the
 * row when the refused request's write had gone through after all), each message stored once in the end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually, TEST_API_KEY } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { timedRequest, type TimedAnswer } from '../support/timedRequest';

jest.setTimeout(300_000);

const CLIENTS = 20;
const PER_CLIENT = 100;
const INSTANCE = 'burst';

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-traces-pg-restart-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url, services: ['traces'] });
}, 240_000);

afterAll(async () => {
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const record = (messageId: string): Promise<TimedAnswer> =>
  timedRequest(`${api.base('traces')}/api/v1/traces`, {
    method: 'POST',
    payload: { messageId, instance: INSTANCE, to: '+15550102000', message: `hello ${messageId}` },
    headers: { 'x-api-key': TEST_API_KEY },
    timeoutMs: 60_000,
  });

/** How many rows each message has. */
async function rowsByMessage(): Promise<Map<string, number>> {
  const c = new Client({ connectionString: pg.url });
  await c.connect();
  try {
    const { rows } = await c.query<{ message_id: string; n: number }>('SELECT message_id, count(*)::int AS n FROM traces WHERE instance = $1 GROUP BY message_id', [INSTANCE]);
    return new Map(rows.map((r) => [r.message_id, r.n]));
  } finally {
    await c.end();
  }
}

test('PostgreSQL stopped and started during 2,000 trace POSTs: every 2xx stored exactly once, every other answer a 503 {detail}; served again by the same process', async () => {
  await eventually(async () => (await record('warm-up')).status === 201, 60_000, 200);
  const pid = api.child.pid;
  const answers = new Map<string, TimedAnswer>();
  let done = 0;
  let restarted = false;
  let takenAfterRestart = 0;
  // each client sends its messages one after the other; after a 503 it waits the Retry-After (a second) before its
  // next one, as a client is told to, so the burst goes on across the outage
  const client = async (c: number) => {
    for (let i = 0; i < PER_CLIENT; i++) {
      const id = `m-${c}-${i}`;
      const a = await record(id);
      answers.set(id, a);
      done++;
      if (a.status === 201 && restarted) takenAfterRestart++;
      if (a.status === 503) await new Promise((r) => setTimeout(r, Number(a.retryAfter ?? 1) * 1000));
    }
  };
  const burst = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  // the outage falls inside the burst
  await eventually(async () => done >= 300, 120_000, 20);
  await pg.stop();
  const stoppedAt = done;
  await new Promise((r) => setTimeout(r, 3000));
  await pg.start();
  restarted = true;
  await burst;

  const oks = [...answers].filter(([, a]) => a.status === 201 || a.status === 200);
  const refused = [...answers].filter(([, a]) => a.status !== 201 && a.status !== 200);
  // the outage was seen (some refused) and the burst went on after it (some taken after the restart)
  expect(refused.length).toBeGreaterThan(0);
  expect(done).toBe(CLIENTS * PER_CLIENT);
  expect(stoppedAt).toBeLessThan(CLIENTS * PER_CLIENT);
  expect(takenAfterRestart).toBeGreaterThan(0);
  for (const [id, a] of refused) {
    expect({ id, status: a.status, retryAfter: a.retryAfter, keys: Object.keys(a.body), detail: a.body.detail }).toEqual({
      id,
      status: 503,
      retryAfter: '1',
      keys: ['detail'],
      detail: expect.stringMatching(/PostgreSQL/),
    });
  }

  const stored = await rowsByMessage();
  for (const [id] of oks) expect([id, stored.get(id)]).toEqual([id, 1]);
  for (const [id, n] of stored) expect([id, n]).toEqual([id, 1]);

  // served again by the same process; what was refused is taken when sent again
  await eventually(async () => (await record('after')).status === 201, 60_000, 200);
  expect(api.child.pid).toBe(pid);
  expect(api.child.exitCode).toBeNull();
  for (const [id] of refused) {
    const again = await record(id);
    expect([id, again.status]).toEqual([id, stored.has(id) ? 200 : 201]);
  }
  const final = await rowsByMessage();
  expect(final.size).toBe(CLIENTS * PER_CLIENT + 2);
  expect([...final.values()].every((n) => n === 1)).toBe(true);
});
