/**
 * A PostgreSQL that runs and answers, but not everything: under `armada api`, on a PostgreSQL of this file's own
 * (test/support/ownPostgres.ts).
 *
 * - No connection slot free (max_connections reached by another client: `FATAL: sorry, too many clients already`,
 *   SQLSTATE 53300). Another client takes every free slot, and the slots of the API's pooled sessions once they are
 *   ended (pg_terminate_backend: an administrator, or the server's idle_session_timeout); then requests, which all
 *   need a new connection, answer each service's 503 with Retry-After, saying no slot is free, never a 500, and write
 *   nothing; /health answers 503 naming PostgreSQL (before: a 503 that did not say what was down: `down` was given
 *   only for an unreachable server).
 * - Read-only (`default_transaction_read_only` turned on, as on a standby: SQLSTATE 25006). Reads are served; writes
 *   answer each service's 503 with Retry-After saying it takes no writes now, and write nothing (before: a 500, as for
 *   a bug of ours).
 *
 * Once the server is whole again, the same requests are served by the same process, and each write answered 201 is
 * there once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually, makeGitRepo } from '../support/harness';
import { connectionSlots } from '../support/connectionSlots';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { asAdministrator, untilNewSessionsAre } from '../support/readOnlyPostgres';
import { SERVICES, serviceRounds, unavailableAnswerProblem } from '../support/serviceRounds';

jest.setTimeout(300_000);
/** How the other client's connections show in pg_stat_activity. */
const OTHER_CLIENT = 'another-client';
/** The connections of `armada api` that are not its pool's (lib/runtime/dependencies.ts, lib/events/listener.ts, lib/db/deadConnections.ts). */
const OWN_CONNECTIONS = ['armada-probe', 'armada-listener', 'armada-pool-check'];

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;
let projectId: string;
/** The other client's connections, each holding a slot. */
const { held, takeEveryFreeSlot, letGo } = connectionSlots(() => pg.url, OTHER_CLIENT);

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pg-slots-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url });
  const p = await eventually(async () => {
    const a = await send('task', 'POST', '/api/projects', { name: 'Slots', repository: { url: makeGitRepo() } });
    return a.status === 201 && a;
  }, 60_000);
  projectId = (p.body.data as { id: string }).id;
}, 240_000);

afterAll(async () => {
  await letGo();
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const { send, requests, allServed, writesOf, accepted } = serviceRounds((service) => api.base(service), () => projectId, 60_000);

/** The backends of the API's pool now (seen on one of the other client's connections). */
async function poolBackends(): Promise<number> {
  const r = await (held[0] as Client).query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> ALL($1::text[])`,
    [[OTHER_CLIENT, ...OWN_CONNECTIONS]],
  );
  return Number(r.rows[0]?.n);
}

/** Ends the sessions of the API's pool (pg_terminate_backend, on one of the other client's connections). */
async function endPoolSessions(): Promise<void> {
  await (held[0] as Client).query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> ALL($1::text[])`,
    [[OTHER_CLIENT, ...OWN_CONNECTIONS]],
  );
}

const NO_SLOT = /^The database \(PostgreSQL\) has no connection slot free \(too many connections\); try again$/;
const READ_ONLY = /^The database \(PostgreSQL\) takes no writes now \(it is read-only: a standby, or default_transaction_read_only is on\); try again$/;

test('no connection slot free: requests that need a new connection answer 503 in each service\'s shape with Retry-After, /health names PostgreSQL; served again once slots are free', async () => {
  await eventually(() => allServed('before'), 60_000, 200);
  const pid = api.child.pid;

  // the other client takes every free slot; then the API's pooled sessions are ended (an administrator, or the
  // server's idle_session_timeout; the API's background work keeps one or two busy, so its pool never empties by its
  // own idle timeout) and the other client takes their slots as well: every request now needs a new connection
  await takeEveryFreeSlot();
  await eventually(async () => {
    await endPoolSessions();
    await takeEveryFreeSlot();
    return (await poolBackends()) === 0;
  }, 60_000, 500);

  try {
    const refused = await Promise.all(requests('refused').map(async (r) => ({ r, a: await r.send() })));
    const health = await Promise.all(SERVICES.map((s) => send(s, 'GET', '/health')));
    process.stdout.write(`no connection slot: ${JSON.stringify({ held: held.length, answers: refused.map(({ r, a }) => [r.name, a.status, a.ms]) })}\n`);
    try {
      // a refused connection is an answer at once: within a bound far above the time it takes
      expect(refused.map(({ r, a }) => [r.name, unavailableAnswerProblem(r, a, [NO_SLOT]) ?? (a.ms < 10_000 ? '' : `answered after ${a.ms} ms`)]).filter(([, p]) => p)).toEqual([]);
      for (const h of health) expect({ status: h.status, down: h.body.down }).toEqual({ status: 503, down: ['postgres'] });
    } catch (err) {
      throw new Error(`${(err as Error).message}\narmada api output:\n${api.output().slice(-4000)}`);
    }
  } finally {
    await letGo(); // the other client lets go
  }

  // the same requests are served again, by the same process, without a restart
  await eventually(() => allServed('after'), 60_000, 200);
  expect(api.child.pid).toBe(pid);
  expect(api.child.exitCode).toBeNull();
  for (const s of SERVICES) expect((await send(s, 'GET', '/health')).status).toBe(200);

  // a write refused so wrote nothing; each write answered 201 is there once
  expect(await writesOf('refused')).toEqual({ task: 0, traces: 0 });
  expect(await writesOf('before')).toEqual(accepted.before);
  expect(await writesOf('after')).toEqual(accepted.after);
});

test('read-only (default_transaction_read_only on, as on a standby): reads are served, writes answer 503 in each service\'s shape with Retry-After and write nothing; served again once it takes writes', async () => {
  await eventually(() => allServed('before-read-only'), 60_000, 200);
  const pid = api.child.pid;

  await asAdministrator(pg.url, 'ALTER SYSTEM SET default_transaction_read_only = on');
  try {
    await untilNewSessionsAre(pg.url, 'on');
    const answers = await Promise.all(requests('read-only').map(async (r) => ({ r, a: await r.send() })));
    const health = await Promise.all(SERVICES.map((s) => send(s, 'GET', '/health')));
    process.stdout.write(`read-only: ${JSON.stringify(answers.map(({ r, a }) => [r.name, a.status, a.ms]))}\n`);
    try {
      const problems = answers.map(({ r, a }) => [r.name, r.ok === 201 ? (unavailableAnswerProblem(r, a, [READ_ONLY]) ?? '') : a.status === r.ok ? '' : `status ${a.status} ${JSON.stringify(a.body)}`]);
      expect(problems.filter(([, p]) => p)).toEqual([]);
      // it answers: /health is 200, as with a full disk (docs/operations.md: alert on the 503 rate)
      expect(health.map((h) => h.status)).toEqual(SERVICES.map(() => 200));
    } catch (err) {
      throw new Error(`${(err as Error).message}\narmada api output:\n${api.output().slice(-4000)}`);
    }
  } finally {
    await asAdministrator(pg.url, 'ALTER SYSTEM RESET default_transaction_read_only');
  }
  await untilNewSessionsAre(pg.url, 'off');

  await eventually(() => allServed('after-read-only'), 60_000, 200);
  expect(api.child.pid).toBe(pid);
  expect(await writesOf('read-only')).toEqual({ task: 0, traces: 0 });
  expect(await writesOf('before-read-only')).toEqual(accepted['before-read-only']);
  expect(await writesOf('after-read-only')).toEqual(accepted['after-read-only']);
});
