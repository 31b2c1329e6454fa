/**
 * The PostgreSQL dependency probe during a long freeze (SIGSTOP of a PostgreSQL of this file's own: connections are
 * taken into its listen queue and never answered) keeps a bounded number of connections open, however long the
 * freeze lasts; once the server runs again, requests are served. Counted on the `armada api` process itself: its TCP
 * sockets to the server's port, from /proc (its file descriptors and the kernel's TCP table).
 *
 * Measured on the old code: after each probe that got no answer in time the next one dialled a new connection and
 * the old one was kept waiting, so the process held one more connection to the frozen server every 2 s or so (about
 * 15 more after 30 s), each of which became a backend at once when the server ran again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnApi, type ApiProcess } from '../support/apiProcess';
import { eventually } from '../support/harness';
import { startOwnPostgres, type OwnPostgres } from '../support/ownPostgres';

jest.setTimeout(300_000);

let home: string;
let pg: OwnPostgres;
let api: ApiProcess;
let thaw: (() => void) | undefined;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-probe-frozen-'));
  pg = await startOwnPostgres(path.join(home, 'pg'));
  api = await spawnApi({ home, databaseUrl: pg.url, services: ['task'] });
}, 240_000);

afterAll(async () => {
  thaw?.();
  await api?.stop();
  await pg?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** The TCP connections process `pid` holds to `port` now (any state): its socket descriptors in the kernel's table. */
function connectionsTo(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (socket?.[1]) inodes.add(socket[1]);
    } catch {
      /* closed meanwhile */
    }
  }
  let n = 0;
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      if (Number.parseInt(cols[2]?.split(':')[1] ?? '', 16) === port && inodes.has(cols[9] ?? '')) n++;
    }
  }
  return n;
}

const get = async (url: string) => {
  const r = await fetch(`${api.base('task')}${url}`, { signal: AbortSignal.timeout(30_000) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('30 s of a frozen PostgreSQL: the API holds a bounded number of connections to it, and serves requests again after SIGCONT', async () => {
  const pid = api.child.pid as number;
  const port = Number(new URL(pg.url).port);
  await eventually(async () => (await get('/api/projects')).status === 200 && (await get('/health')).status === 200, 60_000, 200);
  await sleep(2000); // the probe's connection and the pool's settle
  const before = connectionsTo(pid, port);

  thaw = pg.freeze();
  const samples: number[] = [];
  let health: { status: number; body: Record<string, unknown> } | undefined;
  const frozenAt = Date.now();
  while (Date.now() - frozenAt < 30_000) {
    samples.push(connectionsTo(pid, port));
    if (!health && Date.now() - frozenAt > 10_000) health = await get('/health'); // answered from what the probes know
    await sleep(500);
  }
  thaw();
  thaw = undefined;

  expect(health).toMatchObject({ status: 503, body: { down: ['postgres'] } }); // the probes were at it all along
  // at most: the newest probe connection left waiting for a late answer and the one the probe dials now (the oldest
  // left waiting is the one counted before), the pool's look-up connection while a statement of background work waits
  // (lib/db/deadConnections.ts), and one of slack
  expect(samples.map((n) => n - before).filter((more) => more > 4)).toEqual([]);
  await eventually(async () => (await get('/api/projects')).status === 200 && (await get('/health')).status === 200, 30_000, 200);
  expect(connectionsTo(pid, port)).toBeLessThanOrEqual(before + 4);
});
