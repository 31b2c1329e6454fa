/**
 * PostgreSQL with no connection slot free (max_connections reached: `FATAL: sorry, too many clients already`,
 * SQLSTATE 53300) refuses the dependency probe's own connection (lib/runtime/dependencies.ts). The server answers,
 * so it is not reported down, nor as "not answering": `armada api` says once what it is and what to do, the pool's
 * open connections go on serving, /health stays 200 with that warning, a request that needs a new connection answers
 * 503 naming the cause, and /health, once its own check gets no connection either, answers 503 with the same words.
 * Before: the refused probe called PostgreSQL down, every request got "The database (PostgreSQL) is not answering"
 * and /health a 503 that did not say why.
 *
 * The server is a PostgreSQL of this file's own with max_connections = 12 (test/support/ownPostgres.ts); another
 * client takes every free slot.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually, makeGitRepo } from '../support/harness';
import { connectionSlots } from '../support/connectionSlots';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { timedRequest, type TimedAnswer } from '../support/timedRequest';

jest.setTimeout(300_000);

const OTHER_CLIENT = 'another-client';
const FULL = /^PostgreSQL refuses new connections: every connection slot is taken \(max_connections reached, SQLSTATE 53300\); .*raise max_connections$/;
const NO_SLOT = /^The database \(PostgreSQL\) has no connection slot free \(too many connections\); try again$/;
const NOT_ANSWERING = /not answering/;

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;
const { held, takeEveryFreeSlot, letGo } = connectionSlots(() => pg.url, OTHER_CLIENT);

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pg-full-'));
  pg = await startOwnPostgres(path.join(home, 'pg'), undefined, undefined, { max_connections: '12' });
  api = await spawnApi({ home, databaseUrl: pg.url, services: ['task'] });
  await eventually(async () => (await send('POST', '/api/projects', { name: 'Full', repository: { url: makeGitRepo() } })).status === 201, 60_000);
}, 240_000);

afterAll(async () => {
  await letGo();
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const send = (method: 'GET' | 'POST', url: string, payload?: unknown): Promise<TimedAnswer> =>
  timedRequest(`${api.base('task')}${url}`, { method, payload, timeoutMs: 60_000 });

/** Ends the sessions whose application_name matches `which` (on one of the other client's connections); how many. */
async function endSessions(which: 'probe' | 'pool'): Promise<number> {
  const r = await (held[0] as Client).query<{ n: number }>(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND ${
      which === 'probe' ? "application_name = 'armada-probe'" : "application_name <> ALL($1::text[])"
    }`,
    which === 'probe' ? [] : [[OTHER_CLIENT, 'armada-probe', 'armada-listener', 'armada-pool-check']],
  );
  return r.rows[0]?.n ?? 0;
}

const warnings = () => api.output().split('\n').filter((l) => l.includes('"level":40'));
const messageOf = (a: TimedAnswer) => String((a.body.error as { message?: unknown } | undefined)?.message ?? JSON.stringify(a.body));

test("no connection slot free for the probe: not called down nor 'not answering'; said with what to do; /health and requests name it", async () => {
  expect((await send('GET', '/health')).status).toBe(200);
  await takeEveryFreeSlot();
  // the probe's connection ends (an administrator, the server's idle_session_timeout); its next connect is refused
  // for want of a slot once the other client has taken that one too
  await eventually(async () => {
    await endSessions('probe');
    await takeEveryFreeSlot();
    return warnings().some((l) => FULL.test(String(JSON.parse(l).msg)));
  }, 60_000, 500);

  try {
    // the pool's open connections go on serving: a read is served, or (when it needed a new connection) refused
    // naming the cause, never "not answering"
    const read = await send('GET', '/api/projects');
    expect(read.status === 200 || (read.status === 503 && NO_SLOT.test(messageOf(read))) ? '' : `${read.status} ${messageOf(read)}`).toBe('');
    const health = await send('GET', '/health');
    expect({ status: health.status, warnings: health.body.warnings }).toEqual({ status: 200, warnings: [expect.stringMatching(FULL)] });

    // the pool's own sessions end too: every request needs a new connection
    await eventually(async () => {
      await endSessions('pool');
      await takeEveryFreeSlot();
      const h = await send('GET', '/health');
      return h.status === 503 && h;
    }, 60_000, 500);
    const refused = await send('POST', '/api/tasks', { projectId: 'whatever', title: 'no slot' });
    const healthAfter = await send('GET', '/health');
    expect({ status: refused.status, retryAfter: refused.retryAfter, message: messageOf(refused) }).toEqual({ status: 503, retryAfter: '1', message: expect.stringMatching(NO_SLOT) });
    expect(healthAfter.status).toBe(503);
    expect(healthAfter.body).toMatchObject({ status: 'unavailable', down: ['postgres'], error: expect.stringMatching(FULL) });
  } catch (err) {
    throw new Error(`${(err as Error).message}\narmada api output:\n${api.output().slice(-4000)}`);
  } finally {
    await letGo();
  }

  // said as what it is (once per spell: again only after a connection was taken in between), never called down,
  // never "not answering"
  const lines = warnings().map((l) => String(JSON.parse(l).msg));
  expect(lines.filter((m) => FULL.test(m)).length).toBeGreaterThanOrEqual(1);
  expect(lines.filter((m) => /postgres is unavailable/.test(m) || NOT_ANSWERING.test(m))).toEqual([]);

  // slots free again: served, /health 200 without the warning
  await eventually(async () => {
    const h = await send('GET', '/health');
    return h.status === 200 && h.body.warnings === undefined;
  }, 60_000, 500);
  expect((await send('GET', '/api/projects')).status).toBe(200);
});
