/**
 * PostgreSQL frozen (SIGSTOP of the postmaster and every backend: a hung host, a partition; connections are taken,
 * nothing answers, nothing is refused) under `armada api`, on a PostgreSQL of this file's own
 * (test/support/ownPostgres.ts): requests sent 3 s into the freeze answer each service's 503 with Retry-After in
 * seconds, requests that were already waiting on the database when it froze are released with a 503 too (a write told
 * whether it may have been applied), and once it thaws the same requests are served by the same process, with no
 * write lost or applied twice.
 *
 * Measured on the old code: a read sent into the freeze, whose query went out on an open pooled connection, hung until
 * the server was thawed; one that needed a new connection got its 503 after the pool's 10 s connect timeout; requests
 * sent 3 s into the freeze waited for the probes to call PostgreSQL down, about 6.5 s after the freeze.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually, makeGitRepo } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';
import { answerMessage, type RoundRequest as Request, SERVICES, type Service, serviceRounds, unavailableAnswerProblem } from '../support/serviceRounds';
import type { TimedAnswer as Answer } from '../support/timedRequest';

jest.setTimeout(300_000);

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;
let thaw: (() => void) | undefined;
let projectId: string;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-pg-frozen-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url });
  const p = await send('task', 'POST', '/api/projects', { name: 'Frozen', repository: { url: makeGitRepo() } });
  expect(p.status).toBe(201);
  projectId = (p.body.data as { id: string }).id;
}, 240_000);

afterAll(async () => {
  thaw?.();
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const rounds = serviceRounds((service) => api.base(service), () => projectId, 120_000);
const { send, requests, allServed, writesOf, accepted } = rounds;

const TRY_AGAIN = /PostgreSQL.*try again/;
/** A write released while its statement was with the frozen server (docs/operations.md). */
const OUTCOME_UNKNOWN = /PostgreSQL.*may or may not have been applied/;

/** What is wrong with a 503 of a frozen PostgreSQL (status, shape, Retry-After), or undefined. */
const outageAnswerProblem = (r: Request, a: Answer) => unavailableAnswerProblem(r, a, r.write ? [TRY_AGAIN, OUTCOME_UNKNOWN] : [TRY_AGAIN]);

const outcomeUnknown = (r: Request, a: Answer) => OUTCOME_UNKNOWN.test(answerMessage(r, a));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The answer, or undefined when it has not come by `deadline` (a time). */
async function answerBy(answer: Promise<Answer>, deadline: number): Promise<Answer | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, deadline - Date.now()))));
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('frozen PostgreSQL: waiting requests are released with a 503, requests 3 s into the freeze answer 503 at once with Retry-After; all served again after SIGCONT', async () => {
  await eventually(() => allServed('warm'), 60_000, 200); // up
  // the pool keeps a dozen idle connections: the requests sent into the freeze find one each and send their first
  // statement to the frozen server, those sent later partly need a new connection, which the frozen server never gives
  await Promise.all(Array.from({ length: 12 }, () => send('traces', 'GET', '/api/v1/traces?instance=warm')));
  const pid = api.child.pid;

  thaw = pg.freeze();
  const frozenAt = Date.now();
  // sent into the freeze, before anything can know: each waits on the database (a query on an open connection, or a
  // new connection), and must be released with a 503 once PostgreSQL is called down, without waiting for the thaw
  const waiting = requests('into').map((r) => ({ r, answer: r.send() }));
  await sleep(Math.max(0, frozenAt + 3000 - Date.now()));
  const laterAnswers = await Promise.all(requests('later').map(async (r) => ({ r, a: await r.send() })));
  const released = await Promise.all(waiting.map(async ({ r, answer }) => ({ r, a: await answerBy(answer, frozenAt + 15_000) })));
  const health = await Promise.all(SERVICES.map((s) => send(s, 'GET', '/health')));
  const frozenFor = Date.now() - frozenAt;
  thaw();
  thaw = undefined;
  process.stdout.write(
    `frozen postgres: ${JSON.stringify({ into: released.map(({ r, a }) => [r.name, a?.status ?? 'none', a?.ms, a && outcomeUnknown(r, a) ? 'outcome unknown' : '']), later: laterAnswers.map(({ r, a }) => [r.name, a.status, a.ms, outcomeUnknown(r, a) ? 'outcome unknown' : '']), frozenFor })}\n`,
  );

  try {
    // 3 s into the freeze: each answers the service's 503 with Retry-After, within a bound far above the probes'
    // deadline (before: up to 10 s, or until the thaw)
    expect(laterAnswers.map(({ r, a }) => [r.name, outageAnswerProblem(r, a) ?? (a.ms < 5000 ? '' : `answered after ${a.ms} ms`)]).filter(([, p]) => p)).toEqual([]);
    // the requests that were waiting when it froze were released while it was still frozen (before: hung until the thaw)
    expect(released.map(({ r, a }) => [r.name, a ? (outageAnswerProblem(r, a) ?? '') : 'no answer while frozen']).filter(([, p]) => p)).toEqual([]);
    for (const h of health) expect({ status: h.status, down: h.body.down }).toEqual({ status: 503, down: ['postgres'] });
  } catch (err) {
    throw new Error(`${(err as Error).message}\narmada api output:\n${api.output().slice(-4000)}`);
  }

  // thawed: the same requests are served again, by the same process, without a restart
  await eventually(() => allServed('after'), 60_000, 200);
  expect(api.child.pid).toBe(pid);
  expect(api.child.exitCode).toBeNull();
  for (const s of SERVICES) expect((await send(s, 'GET', '/health')).status).toBe(200);

  // no write applied twice or lost: what answered 503 "try again" left nothing; what was told its outcome is unknown
  // left it at most once; each write answered 201 (warm, after) is there once
  const into = await eventually(async () => {
    const w = await writesOf('into');
    await sleep(1000); // a statement the server had when it froze ran at the thaw: settled once two looks agree
    const again = await writesOf('into');
    return JSON.stringify(w) === JSON.stringify(again) && w;
  }, 30_000);
  const later = await writesOf('later');
  const answered = [...released.map((x) => ({ ...x, round: 'into', rows: into })), ...laterAnswers.map((x) => ({ ...x, round: 'later', rows: later }))];
  for (const { r, a, round, rows } of answered.filter(({ r }) => r.write && r.service !== 'agents')) {
    const n = rows[r.service as 'task' | 'traces'];
    const told = a && outcomeUnknown(r, a) ? 'outcome unknown' : 'try again';
    // "try again": nothing was written; "outcome unknown": written at most once
    const ok = told === 'try again' ? n === 0 : n <= 1;
    expect({ round, write: r.name, told, rows: n, ok }).toEqual({ round, write: r.name, told, rows: n, ok: true });
  }
  expect(await writesOf('warm')).toEqual(accepted.warm);
  expect(await writesOf('after')).toEqual(accepted.after);
});

test('armada api started while PostgreSQL is frozen: it listens, answers 503 with Retry-After and /health names postgres; after SIGCONT it serves, without a restart', async () => {
  thaw = pg.freeze();
  let late: ApiProcess | undefined;
  try {
    // before: the task service's event listener read its starting point at start, on a new pooled connection: after
    // the pool's 10 s connect timeout the process exited 1; without that read, its own connect waited for the thaw
    late = await spawnApi({ home: fs.mkdtempSync(path.join(home, 'late-')), databaseUrl: pg.url });
    const lateRounds = serviceRounds(late.base.bind(late), () => projectId, 120_000);
    const read = (service: Service, url: string) => lateRounds.send(service, 'GET', url);
    const reads: [Service, string][] = [
      ['task', '/api/projects'],
      ['scheduler', '/api/v1/workflows'],
      ['agents', '/api/v1/memory/stats'],
      ['traces', '/api/v1/traces?instance=late'],
    ];
    // known down within seconds of the probes' first looks: each read a 503 at once, /health names postgres
    for (const s of SERVICES) await eventually(async () => String((await read(s, '/health')).body.down) === 'postgres', 30_000, 500);
    for (const [service, url] of reads) {
      const a = await read(service, url);
      const r = { name: `${service} ${url}`, service, write: false, ok: 200, send: () => read(service, url) };
      expect([r.name, outageAnswerProblem(r, a) ?? (a.ms < 5000 ? '' : `answered after ${a.ms} ms`)]).toEqual([r.name, '']);
    }
    thaw();
    thaw = undefined;
    for (const [service, url] of reads) await eventually(async () => (await read(service, url)).status === 200, 60_000, 250);
    for (const s of SERVICES) await eventually(async () => (await read(s, '/health')).status === 200, 60_000, 250);
    expect(late.child.exitCode).toBeNull();
  } catch (err) {
    throw new Error(`${(err as Error).message}\narmada api output:\n${late?.output().slice(-4000) ?? ''}`);
  } finally {
    thaw?.();
    thaw = undefined;
    await late?.stop();
  }
});
