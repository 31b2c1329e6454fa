/**
 * Live-log benchmark (issue 17 item 4), one run on a local PostgreSQL and Temporal dev server (`armada infra`), with
 * `armada api --service task` and `armada worker` as their own processes so their CPU and RSS are measured apart:
 *  - A agents (bench/chattyAgent.pl, or bench/chattyAgent.js with --agent node) each print R lines/s for S s, every
 *    line carrying its emit time;
 *  - F WebSocket followers (/ws/execution-processes/:id/logs/normalized), spread round-robin over the agents;
 *  - emit → follower latency p50/p99/max, lines lost and out of order (both must be 0), per follower;
 *  - lines stored/s, and a raw multi-row INSERT of the same lines into a trigger-free copy of process_logs in the
 *    same run (lines/s and the ratio);
 *  - CPU (seconds and % of one core over the emitting window) and peak RSS of the API and the worker;
 *  - the machine: load average at the start and the end, CPU seconds per program over the run (the agents, API,
 *    worker, PostgreSQL, Temporal, this process's followers, everything else) of cores × wall seconds, and what
 *    PostgreSQL was asked to do (commits, rows written per table); a last line says whether the goal was met.
 * Followers connect as soon as their process's start returns; lines emitted before a follower's socket opened
 * count for lost/out of order but not for the latency (`backlogLines`).
 *  - this process's own event-loop delay (p99, max): a receipt is timed when its message event runs here, so a pause
 *    of the bench itself would read as latency;
 * Run: `node bin/armada-ts bench/logs.ts [--agents 50] [--rate 200] [--seconds 30] [--followers 100] [--agent perl|node] [--profile dir] [--split] [--dump file] [--pg-activity file]`
 * (--dump: every live line's emit, commit and receipt times, the processes' start and finish, and this process's own pauses over 20 ms, as JSON lines);
 * the issue table's row: `--agents 10 --followers 10`.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { cpuShare } from './cpuShare';
import { benchRepo, freePort, settleDisk, spawnArmada } from './benchInfra';
import WebSocket from 'ws';
import { readProcStat } from '../lib/process/procStat';

const { values: flags } = parseArgs({
  options: {
    agents: { type: 'string', default: '50' },
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '30' },
    followers: { type: 'string', default: '100' },
    // the chatty agent's program: perl (bench/chattyAgent.pl, lighter) or node (bench/chattyAgent.js, the one of
    // sessions 20-31)
    agent: { type: 'string', default: 'perl' },
    // writes V8 CPU profiles of the API, the worker and `armada infra` (node --cpu-prof) into this directory
    profile: { type: 'string' },
    // the bench LISTENs on the log channel itself to split worker → follower at the commit (one more listener)
    split: { type: 'boolean', default: false },
    // writes every follower's live line as JSON lines [agent, emit ms, seq, commit ms or null, receipt ms] from the
    // first start, and the processes' start and finish, to this file (for a look at where the tail is)
    dump: { type: 'string' },
    // samples pg_stat_activity every 20 ms during the run into this file, as JSON lines [ms from the first start, active sessions]
    'pg-activity': { type: 'string' },
  },
});
const AGENTS = Number(flags.agents);
const RATE = Number(flags.rate);
const SECONDS = Number(flags.seconds);
const FOLLOWERS = Number(flags.followers);
const PER_AGENT = RATE * SECONDS;
if (flags.agent !== 'perl' && flags.agent !== 'node') {
  process.stderr.write(`logs: --agent is perl or node, not ${flags.agent}\n`);
  process.exit(2);
}
const AGENT_COMMAND = flags.agent === 'node' ? [process.execPath, path.join(__dirname, 'chattyAgent.js')] : ['perl', path.join(__dirname, 'chattyAgent.pl')];

/** Spawns `bin/armada <args>` (benchInfra's spawnArmada), with a CPU profile of the API, the worker and infra under --profile. */
function armada(args: string[], event: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; ready: Record<string, unknown> }> {
  const prof = flags.profile && ['api', 'worker', 'infra'].includes(args[0] as string) ? [`--cpu-prof`, `--cpu-prof-dir=${path.resolve(flags.profile)}`, `--cpu-prof-name=${args[0]}.cpuprofile`] : [];
  return spawnArmada(args, event, env, prof);
}

/** [ppid, own CPU ticks, reaped children's CPU ticks] of a pid, from /proc/<pid>/stat. */
function statOf(pid: number | string): [number, number, number] {
  const s = readProcStat(pid);
  if (!s) throw new Error(`process ${pid} is gone`);
  return [s.ppid, s.utime + s.stime, s.cutime + s.cstime];
}

/**
 * CPU seconds (user + system) of a pid and of its reaped children, and its peak RSS (MiB), from /proc. Its live
 * children count with it: the process launcher (lib/process/launcher.ts) is the pid's helper, and what the launcher
 * reaped (the agents and git it started) counts as the pid's children.
 */
function usage(pid: number): { cpu: number; childrenCpu: number; hwmMiB: number } {
  let [, ticks, reaped] = statOf(pid);
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const [ppid, own, theirs] = statOf(e);
      if (ppid !== pid) continue;
      ticks += own;
      reaped += theirs;
    } catch {
      /* exited */
    }
  }
  const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpu: ticks / 100, childrenCpu: reaped / 100, hwmMiB: Number(hwm?.[1] ?? 0) / 1024 };
}

const pct = (xs: number[], p: number) => (xs.length ? (xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number) : Number.NaN);

interface Follower {
  processId: string;
  /** emit → follower of the lines emitted while this follower's socket was open (live lines) */
  latencies: number[];
  /** worker (the row's ts) → follower of the same lines */
  fromWorker: number[];
  /** [emit time, seq, receipt time] of the same live lines (split by the bench's own LISTEN, and by time window) */
  samples: number[][];
  /** lines emitted before the socket opened (read back from the database on connect): not in the latency */
  backlog: number;
  received: number;
  distinct: number;
  lost: number;
  reordered: number;
  duplicates: number;
  done: Promise<void>;
  /** fills latencies, fromWorker and samples (once, after the run) */
  collect: () => void;
}

/** One WebSocket follower of a process's normalized log, retried while the process row does not exist yet. */
function follow(base: string, processId: string): Follower {
  const f: Follower = { processId, latencies: [], fromWorker: [], samples: [], backlog: 0, received: 0, distinct: 0, lost: 0, reordered: 0, duplicates: 0, done: Promise.resolve(), collect: () => undefined };
  // while the run goes on, a receipt allocates nothing that outlives it (no array per line, no growing arrays, no
  // Set): the bench's own old space stays still, so its collections do not pause the receipts (its major GC did, as
  // a burst of "latency" at the same moment in every follower); the arrays above are filled from these at the end
  const emittedAt = new Float64Array(PER_AGENT);
  const workerAt = new Float64Array(PER_AGENT);
  const seqOf = new Float64Array(PER_AGENT);
  const receivedAt = new Float64Array(PER_AGENT);
  let live = 0;
  const seen = new Uint8Array(PER_AGENT + 1);
  let last = 0;
  f.done = (async () => {
    for (let tries = 0; ; tries++) {
      let openedAt = Number.POSITIVE_INFINITY;
      const closed = await new Promise<{ code: number }>((resolve, reject) => {
        const ws = new WebSocket(`${base.replace('http', 'ws')}/ws/execution-processes/${processId}/logs/normalized`);
        ws.on('open', () => (openedAt = performance.timeOrigin + performance.now()));
        ws.on('message', (d) => {
          const now = performance.timeOrigin + performance.now();
          const m = JSON.parse(String(d)) as { message?: string; timestamp?: string; seq?: number };
          const hit = /^chatty (\d+) ([\d.]+)$/.exec(m.message ?? '');
          if (!hit) return;
          const n = Number(hit[1]);
          const emitted = Number(hit[2]);
          if (emitted >= openedAt && live < PER_AGENT) {
            emittedAt[live] = emitted;
            // the row's timestamp is when the worker parsed the line: the rest is the sink, PostgreSQL and the API
            workerAt[live] = Date.parse(m.timestamp ?? '');
            seqOf[live] = m.seq ?? 0;
            receivedAt[live] = now;
            live++;
          }
          else f.backlog++;
          if (n < 1 || n > PER_AGENT || seen[n]) f.duplicates++;
          else {
            seen[n] = 1;
            f.distinct++;
          }
          if (n <= last) f.reordered++;
          last = Math.max(last, n);
          f.received++;
        });
        ws.on('close', (code) => resolve({ code }));
        ws.on('error', reject);
      });
      if (closed.code !== 4404 || tries > 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    f.lost = PER_AGENT - f.distinct;
  })();
  f.collect = () => {
    for (let i = 0; i < live; i++) {
      const at = receivedAt[i] as number;
      f.latencies.push(at - (emittedAt[i] as number));
      f.fromWorker.push(at - (workerAt[i] as number));
      f.samples.push([emittedAt[i] as number, seqOf[i] as number, at]);
    }
  };
  return f;
}

async function rawInsertRate(db: Client, processIds: string[]): Promise<{ lines: number; perSecond: number }> {
  await db.query('CREATE TABLE bench_raw_logs (LIKE process_logs INCLUDING DEFAULTS INCLUDING INDEXES)');
  const { rows } = await db.query<{ process_id: string; seq: number; attempt_id: string; level: string; message: string; source: string; raw: string; metadata: unknown; ts: Date }>(
    'SELECT * FROM process_logs WHERE process_id = ANY($1::text[]) ORDER BY process_id, seq',
    [processIds],
  );
  const BATCH = 500;
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += BATCH) {
    const chunk = rows.slice(i, i + BATCH);
    const values: unknown[] = [];
    const tuples = chunk.map((r) => {
      const b = values.length;
      values.push(r.process_id, r.seq, r.attempt_id, r.level, r.message, r.source, r.raw, r.metadata, r.ts);
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8}, $${b + 9})`;
    });
    await db.query(`INSERT INTO bench_raw_logs (process_id, seq, attempt_id, level, message, source, raw, metadata, ts) VALUES ${tuples.join(', ')}`, values);
  }
  const s = (performance.now() - t0) / 1000;
  return { lines: rows.length, perSecond: rows.length / s };
}

async function main() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-logs-'));
  const bundle = path.join(home, 'bundle.js');
  const infra = await armada(['infra', '--home', home, '--pg-port', String(await freePort()), '--temporal-port', String(await freePort()), '--bundle', bundle, '--show-secrets'], 'ready', {
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
  });
  const databaseUrl = infra.ready.databaseUrl as string;
  const temporalAddress = infra.ready.temporalAddress as string;
  const children: ChildProcess[] = [infra.child];
  const cleanup: string[] = [];
  try {
    const configPath = path.join(home, 'config.json');
    fs.writeFileSync(
      configPath,
      JSON.stringify({
        agents: { chatty: { command: AGENT_COMMAND, format: 'text', env: { CHATTY_RATE: String(RATE), CHATTY_SECONDS: String(SECONDS) } } },
      }),
    );
    const env = {
      ARMADA_HOME: home,
      ARMADA_CONFIG: configPath,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      ARMADA_TASK_QUEUE: 'bench-logs',
      ARMADA_WORKFLOW_BUNDLE: bundle,
      ARMADA_TASK_PORT: String(await freePort()),
    };
    const worker = await armada(['worker', '--concurrency', String(Math.max(20, AGENTS * 2)), '--max-agents', String(AGENTS)], 'worker-started', env);
    children.push(worker.child);
    const api = await armada(['api', '--service', 'task'], 'listening', env);
    children.push(api.child);
    const base = `http://127.0.0.1:${env.ARMADA_TASK_PORT}`;
    const post = async (url: string, body: unknown) => {
      const r = await fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const j = (await r.json()) as { data: Record<string, string> };
      if (!r.ok) throw new Error(`${url}: ${r.status} ${JSON.stringify(j)}`);
      return j.data;
    };
    const repo = benchRepo(fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-repo-')));
    cleanup.push(repo);
    const projectId = (await post('/api/projects', { name: 'bench-logs', repository: { url: repo } })).id as string;

    // what PostgreSQL was asked to do during the run: commits, and rows written per table
    const pgStats = async () => {
      const c = new Client({ connectionString: databaseUrl });
      await c.connect();
      try {
        const { rows: d } = await c.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
        const { rows: t } = await c.query<{ relname: string; ins: string; upd: string }>(
          'SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd > 0',
        );
        const { rows: w } = await c.query<{ bytes: string; segments: string }>('SELECT (SELECT wal_bytes FROM pg_stat_wal) AS bytes, (SELECT count(*) FROM pg_ls_waldir()) AS segments');
        const { rows: io } = await c.query<{ writes: string | null; fsyncs: string | null }>("SELECT sum(writes) AS writes, sum(fsyncs) AS fsyncs FROM pg_stat_io WHERE object = 'wal'");
        return {
          commits: Number(d[0]?.xact_commit ?? 0),
          tables: new Map(t.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd) }])),
          wal: { bytes: Number(w[0]?.bytes ?? 0), segments: Number(w[0]?.segments ?? 0), writes: Number(io[0]?.writes ?? 0), fsyncs: Number(io[0]?.fsyncs ?? 0) },
        };
      } finally {
        await c.end();
      }
    };
    await settleDisk(); // what the setup wrote (the cluster, the repository) is on disk before the run
    const pgBefore = await pgStats();
    const apiPid = api.child.pid as number;
    const workerPid = worker.child.pid as number;
    const before = { api: usage(apiPid), worker: usage(workerPid) };
    // the bench's own LISTEN on the log channel: when each process's rows were committed (the notification's
    // receipt here), to split worker → follower into worker → committed and committed → follower
    const notes = new Map<string, number[][]>();
    const listenDb = new Client({ connectionString: databaseUrl });
    listenDb.on('error', () => undefined);
    if (flags.split) await listenDb.connect();
    listenDb.on('notification', (n) => {
      const at = performance.timeOrigin + performance.now();
      try {
        const m = JSON.parse(n.payload ?? '') as { p: string; s: number };
        const list = notes.get(m.p);
        if (list) list.push([m.s, at]);
        else notes.set(m.p, [[m.s, at]]);
      } catch {
        /* not ours */
      }
    });
    if (flags.split) await listenDb.query('LISTEN armada_logs');
    const machineCpu = cpuShare();
    // this process's own event-loop delay: a follower's receipt time is taken when its message event runs here, so a
    // pause of this process (its GC) would show as latency that is not Armada's
    const benchLoop = monitorEventLoopDelay({ resolution: 10 });
    benchLoop.enable();
    const load0 = os.loadavg();
    const t0 = Date.now();
    // with --dump: this process's own pauses over 20 ms (when, how long), to tell its stalls from Armada's
    const stalls: [number, number][] = [];
    let tick = performance.now();
    const stallWatch = flags.dump
      ? setInterval(() => {
          const now = performance.now();
          if (now - tick > 25) stalls.push([Math.round(performance.timeOrigin + tick - t0), Math.round(now - tick - 5)]);
          tick = now;
        }, 5)
      : undefined;
    // --pg-activity: what PostgreSQL's sessions are doing (running, or waiting on what: a lock, the WAL's fsync) every 20 ms
    if (flags['pg-activity']) {
      const actDb = new Client({ connectionString: databaseUrl });
      await actDb.connect();
      const out = fs.createWriteStream(flags['pg-activity']);
      const poll = async () => {
        const { rows } = await actDb.query("SELECT pid, backend_type, wait_event_type, wait_event, left(query, 160) AS q, round(extract(epoch FROM now() - query_start) * 1000) AS ms FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()");
        out.write(`${JSON.stringify([Date.now() - t0, rows])}\n`);
        if (Date.now() - t0 < (SECONDS + 8) * 1000) setTimeout(poll, 20);
        else await actDb.end();
      };
      void poll();
    }
    const processIds: string[] = [];
    const followers: Follower[] = [];
    // each process's followers connect as soon as its start returns (they retry until the process row exists), so
    // they follow it live, as a user watching the run would: a line emitted before a follower's socket opened
    // still counts for lost/out of order, but not for the latency (it is the backlog read on connect)
    for (let i = 0; i < AGENTS; i++) {
      const taskId = (await post('/api/tasks', { projectId, title: `chatty ${i}` })).id as string;
      const processId = (await post(`/api/tasks/${taskId}/start`, { llm: 'chatty' })).processId as string;
      processIds.push(processId);
      for (let j = i; j < FOLLOWERS; j += AGENTS) followers.push(follow(base, processId));
    }
    let finished = 0;
    for (const f of followers) void f.done.then(() => finished++);
    const progressDb = new Client({ connectionString: databaseUrl });
    progressDb.on('error', () => undefined); // a lost progress connection does not end the run
    await progressDb.connect();
    const progress = setInterval(() => {
      void progressDb
        .query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM processes WHERE id = ANY($1::text[]) GROUP BY status', [processIds])
        .then(({ rows }) => {
          const received = followers.reduce((a, f) => a + f.received, 0);
          process.stderr.write(`${Math.round((Date.now() - t0) / 1000)} s: ${received} lines at followers, ${finished}/${FOLLOWERS} followers done, processes ${rows.map((r) => `${r.status} ${r.n}`).join(', ')}\n`);
        })
        .catch(() => undefined);
    }, 15_000);
    const timedOut = await Promise.race([
      Promise.all(followers.map((f) => f.done)).then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), (SECONDS + 300) * 1000).unref()),
    ]);
    clearInterval(progress);
    if (stallWatch) clearInterval(stallWatch);
    await progressDb.end();
    if (flags.split) await listenDb.end();
    // a follower still open when the run gives up counts what it has not received as lost
    if (timedOut) for (const f of followers) f.lost = PER_AGENT - f.distinct;
    for (const f of followers) f.collect();
    const wall = (Date.now() - t0) / 1000;
    const after = { api: usage(apiPid), worker: usage(workerPid) };
    benchLoop.disable();
    const machine = machineCpu();
    const load1 = os.loadavg();

    // the stats collector reports with a delay of up to PGSTAT_MIN_INTERVAL (1 s)
    await new Promise((r) => setTimeout(r, 1500));
    const pgAfter = await pgStats();
    const pgWork: Record<string, number | string> = {
      commits: pgAfter.commits - pgBefore.commits,
      walMiB: Math.round((pgAfter.wal.bytes - pgBefore.wal.bytes) / 1048576),
      walWrites: pgAfter.wal.writes - pgBefore.wal.writes,
      walFsyncs: pgAfter.wal.fsyncs - pgBefore.wal.fsyncs,
      walSegments: `${pgBefore.wal.segments} → ${pgAfter.wal.segments}`,
    };
    for (const [name, v] of pgAfter.tables) {
      const b = pgBefore.tables.get(name) ?? { ins: 0, upd: 0 };
      if (v.ins - b.ins + v.upd - b.upd > 0) pgWork[name] = `${v.ins - b.ins} inserted, ${v.upd - b.upd} updated`;
    }
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const { rows: stored } = await db.query<{ n: string; first: Date; last: Date }>(
      `SELECT count(*) AS n, min(ts) AS first, max(ts) AS last FROM process_logs WHERE process_id = ANY($1::text[]) AND message LIKE 'chatty %'`,
      [processIds],
    );
    const s = stored[0] as { n: string; first: Date; last: Date };
    const storedLines = Number(s.n);
    const storedPerSecond = storedLines / Math.max(0.001, (s.last.getTime() - s.first.getTime()) / 1000);
    // the row's ts is when the worker parsed the line: emit → worker is the share before the database and the API
    const { rows: sample } = await db.query<{ message: string; ts: Date }>(
      `SELECT message, ts FROM process_logs WHERE process_id = ANY($1::text[]) AND message LIKE 'chatty %'`,
      [processIds],
    );
    if (flags.dump) {
      const { rows: procs } = await db.query<{ id: string; started_at: Date; finished_at: Date | null }>(
        'SELECT id, started_at, finished_at FROM processes WHERE id = ANY($1::text[])',
        [processIds],
      );
      const out = fs.createWriteStream(flags.dump);
      out.write(`${JSON.stringify({ t0 })}\n`);
      for (const st of stalls) out.write(`${JSON.stringify({ stall: st })}\n`);
      for (const p of procs) out.write(`${JSON.stringify({ agent: processIds.indexOf(p.id), started: p.started_at.getTime() - t0, finished: p.finished_at ? p.finished_at.getTime() - t0 : null })}\n`);
      for (const f of followers) {
        const list = notes.get(f.processId) ?? [];
        for (const [emitted, seq, at] of f.samples as [number, number, number][]) {
          const note = list.find((n) => (n[0] as number) >= seq);
          out.write(`${JSON.stringify([processIds.indexOf(f.processId), Math.round(emitted - t0), seq, note ? Math.round((note[1] as number) - t0) : null, Math.round(at - t0)])}\n`);
        }
      }
      await new Promise((r) => out.end(r));
    }
    const toWorker = sample.map((r) => r.ts.getTime() - Number(r.message.split(' ')[2])).sort((a, b) => a - b);
    const raw = await rawInsertRate(db, processIds);
    await db.end();

    const lat = followers.flatMap((f) => f.latencies).sort((a, b) => a - b);
    // emit → committed (the first notification covering the line's seq, heard by this process) and committed →
    // follower; and emit → follower p99 per 5 s window of emit time (is the tail the start burst?)
    const toCommit: number[] = [];
    const commitToFollower: number[] = [];
    /** per 5 s of emit time: emit → follower, and with --split emit → commit and commit → follower */
    const windows = new Map<number, { total: number[]; toCommit: number[]; commitToFollower: number[] }>();
    for (const f of followers) {
      const list = notes.get(f.processId) ?? [];
      for (const [emitted, seq, at] of f.samples as [number, number, number][]) {
        let lo = 0;
        let hi = list.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if ((list[mid] as number[])[0] as number >= seq) hi = mid;
          else lo = mid + 1;
        }
        const note = list[lo];
        const w = Math.floor((emitted - t0) / 5000) * 5;
        let ws = windows.get(w);
        if (!ws) {
          ws = { total: [], toCommit: [], commitToFollower: [] };
          windows.set(w, ws);
        }
        ws.total.push(at - emitted);
        if (note) {
          toCommit.push((note[1] as number) - emitted);
          commitToFollower.push(at - (note[1] as number));
          ws.toCommit.push((note[1] as number) - emitted);
          ws.commitToFollower.push(at - (note[1] as number));
        }
      }
    }
    toCommit.sort((a, b) => a - b);
    commitToFollower.sort((a, b) => a - b);
    const byWindow = Object.fromEntries(
      [...windows].sort((a, b) => a[0] - b[0]).map(([w, x]) => {
        for (const xs of [x.total, x.toCommit, x.commitToFollower]) xs.sort((a, b) => a - b);
        const split = flags.split ? { emitToCommitP99: Math.round(pct(x.toCommit, 99)), commitToFollowerP99: Math.round(pct(x.commitToFollower, 99)) } : {};
        return [`${w}-${w + 5}s`, { lines: x.total.length, p50: Math.round(pct(x.total, 50)), p99: Math.round(pct(x.total, 99)), ...split }];
      }),
    );
    const fromWorker = followers.flatMap((f) => f.fromWorker).sort((a, b) => a - b);
    const sum = (k: 'lost' | 'reordered' | 'duplicates' | 'received') => followers.reduce((a, f) => a + f[k], 0);
    const cpu = (k: 'api' | 'worker') => after[k].cpu - before[k].cpu;
    const agentsCpu = after.worker.childrenCpu - before.worker.childrenCpu;
    const cpuBreakdown = {
      agents: Number(agentsCpu.toFixed(1)),
      api: Number(cpu('api').toFixed(1)),
      worker: Number(cpu('worker').toFixed(1)),
      postgres: Number((machine.postgres ?? 0).toFixed(1)),
      temporal: Number((machine.temporal ?? 0).toFixed(1)),
      // this process: the 100 WebSocket followers parsing every message, and the progress query
      benchFollowers: Number((machine.bench ?? 0).toFixed(1)),
      // everything else on the machine (other users' jobs, `armada infra`'s own node process)
      other: Number(Math.max(0, (machine.other ?? 0) - cpu('api') - cpu('worker')).toFixed(1)),
    };
    const result = {
      agents: AGENTS,
      agentProgram: flags.agent,
      linesPerSecondPerAgent: RATE,
      seconds: SECONDS,
      followers: FOLLOWERS,
      machine: {
        cores: os.cpus().length,
        loadavg: { atStart: load0.map((x) => Number(x.toFixed(2))), atEnd: load1.map((x) => Number(x.toFixed(2))) },
        // CPU seconds per program over the run (from the first start to the last follower done), of the
        // cores × wall seconds the machine had: the agents are the worker's reaped children
        cpuSeconds: cpuBreakdown,
        cpuSecondsAvailable: Number((os.cpus().length * wall).toFixed(1)),
      },
      postgres: pgWork,
      timedOut,
      linesEmitted: AGENTS * PER_AGENT,
      linesStored: storedLines,
      storedPerSecond: Math.round(storedPerSecond),
      rawInsertPerSecond: Math.round(raw.perSecond),
      storedOverRaw: Number((storedPerSecond / raw.perSecond).toFixed(3)),
      followerLines: sum('received'),
      // lines emitted before their follower's socket opened (read back on connect, not in the latency)
      backlogLines: followers.reduce((a, f) => a + f.backlog, 0),
      latencyMs: { p50: Number(pct(lat, 50).toFixed(1)), p99: Number(pct(lat, 99).toFixed(1)), max: Number((lat.at(-1) ?? Number.NaN).toFixed(1)) },
      emitToWorkerMs: { p50: Math.round(pct(toWorker, 50)), p99: Math.round(pct(toWorker, 99)) },
      workerToFollowerMs: { p50: Math.round(pct(fromWorker, 50)), p99: Math.round(pct(fromWorker, 99)) },
      // the split by the bench's own LISTEN: emit → the rows' commit notification here, then → the follower
      emitToCommitMs: !flags.split ? undefined : { p50: Math.round(pct(toCommit, 50)), p99: Math.round(pct(toCommit, 99)) },
      commitToFollowerMs: !flags.split ? undefined : { p50: Math.round(pct(commitToFollower, 50)), p99: Math.round(pct(commitToFollower, 99)) },
      // emit → follower per 5 s of emit time from the first start
      latencyByWindow: byWindow,
      lost: sum('lost'),
      reordered: sum('reordered'),
      duplicates: sum('duplicates'),
      wallSeconds: Number(wall.toFixed(1)),
      // this process's event-loop delay over the run (ms): what its own pauses may have added to the latency
      benchEventLoopDelayMs: { p99: Number((benchLoop.percentile(99) / 1e6).toFixed(1)), max: Number((benchLoop.max / 1e6).toFixed(1)) },
      api: { cpuSeconds: Number(cpu('api').toFixed(1)), cpuPercentOfOneCore: Math.round((cpu('api') / wall) * 100), peakRssMiB: Math.round(after.api.hwmMiB) },
      worker: { cpuSeconds: Number(cpu('worker').toFixed(1)), cpuPercentOfOneCore: Math.round((cpu('worker') / wall) * 100), peakRssMiB: Math.round(after.worker.hwmMiB) },
    };
    const available = result.machine.cpuSecondsAvailable;
    const busy = Math.round((Object.values(cpuBreakdown).reduce((a, b) => a + b, 0) / available) * 100);
    const agentShare = Math.round((cpuBreakdown.agents / available) * 100);
    const otherShare = Math.round((cpuBreakdown.other / available) * 100);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(
      `\n${AGENTS} agents (${flags.agent}) × ${RATE} lines/s × ${SECONDS} s, ${FOLLOWERS} WebSocket followers: emit → follower p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms; ` +
        `lost ${result.lost}, out of order ${result.reordered}, duplicates ${result.duplicates}; stored ${result.storedPerSecond} lines/s vs raw INSERT ${result.rawInsertPerSecond} lines/s (${result.storedOverRaw})\n` +
        `machine: ${result.machine.cores} cores, load average ${load0[0]?.toFixed(2)} at the start, ${load1[0]?.toFixed(2)} at the end; CPU seconds of the ${result.machine.cpuSecondsAvailable} available: ` +
        `${Object.entries(cpuBreakdown).map(([k, v]) => `${k} ${v}`).join(', ')}\n` +
        `goal (0 lost, 0 out of order, p99 ≤ 100 ms): ${result.lost === 0 && result.reordered === 0 && result.latencyMs.p99 <= 100 ? 'met' : 'NOT met'}` +
        ` (the machine was ${busy}% busy over the run; the agents alone used ${agentShare}% of it, programs outside this run ${otherShare}%)\n`,
    );
  } finally {
    for (const c of children.reverse()) {
      c.kill('SIGTERM');
      await new Promise((r) => (c.exitCode !== null ? r(undefined) : c.once('exit', r)));
    }
    for (const dir of [home, ...cleanup]) fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
