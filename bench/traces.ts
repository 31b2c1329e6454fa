/**
 * Trace service benchmark: ingests N traces (default 100 000) through POST /api/v1/traces of a real traces app on
 * loopback (a child process, so the load generator does not share its event loop), measures a raw single-row INSERT
 * baseline in the same run, then times the analytics and list queries over the ingested data.
 *
 *   node bin/armada-ts bench/traces.ts [--traces 100000] [--baseline 20000] [--connections 32] [--days 30]
 *
 * Uses DATABASE_URL when set (a scratch database is created next to it and dropped), else an embedded PostgreSQL in
 * a temp directory. Prints a summary and a JSON line with every figure.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Client, type Pool } from 'pg';
import { buildTracesApp } from '../api/traces/app';
import { loadConfig } from '../lib/config';
import { migrate } from '../lib/db/migrate';
import { createPool } from '../lib/db/pool';
import { traceAnalytics } from '../lib/db/traces';
import { resolveKeys } from '../lib/keys';
import { createLogger } from '../lib/logger';
import { createMetrics } from '../lib/metrics';
import { startEmbeddedPostgres } from '../lib/runtime/embeddedPostgres';
import { createTemporalHandle } from '../lib/temporal/client';

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}
interface AutocannonRequest {
  setupRequest?: (req: { body?: string }) => { body?: string };
}
type Autocannon = (opts: Record<string, unknown> & { requests?: AutocannonRequest[] }) => Promise<AutocannonResult>;
// autocannon ships no types; its options are documented in its README
const autocannon = require('autocannon') as Autocannon;

const API_KEY = 'bench-traces-key-0123456789abcdef';
const INSTANCES = ['sales', 'support', 'billing', 'marketing', 'ops'];
const STATUSES = ['sent', 'sent', 'sent', 'delivered', 'delivered', 'read', 'read', 'failed'] as const;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a non-negative integer`);
  return v;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The i-th synthetic trace: spread over the last `days` days, five instances, 1 000 recipients. */
function traceBody(i: number, days: number, runId: string): Record<string, unknown> {
  const sentAt = new Date(Date.now() - ((i * 7919) % (days * 86_400)) * 1000);
  return {
    messageId: `${runId}-${i}`,
    instance: INSTANCES[i % INSTANCES.length],
    to: `+1 (555) ${String(100 + (i % 900)).padStart(3, '0')}-${String(i % 10_000).padStart(4, '0')}`,
    message: `Order ${i} has shipped`,
    status: STATUSES[i % STATUSES.length],
    sentAt: sentAt.toISOString(),
    payload: { headers: { 'content-type': 'application/json' }, body: { order: i } },
  };
}

const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

/** Child mode: serve the traces app on loopback against BENCH_DATABASE_URL and print its address. */
async function serve(): Promise<void> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-home-'));
  const config = loadConfig({ ARMADA_HOME: home, ARMADA_CONFIG: path.join(home, 'config.json'), ARMADA_API_KEY: API_KEY, HOME: os.homedir() });
  const logger = createLogger('warn');
  const db = createPool(process.env.BENCH_DATABASE_URL as string, logger, { max: 20 });
  const app = await buildTracesApp({ db, config, keys: resolveKeys(config), temporal: createTemporalHandle('127.0.0.1:1', 'default'), logger, metrics: createMetrics() });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`${JSON.stringify({ url })}\n`);
  const stop = async () => {
    await app.close();
    await db.end();
    fs.rmSync(home, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function startServer(databaseUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'bin', 'armada-ts'), __filename, '--serve'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_DATABASE_URL: databaseUrl },
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`bench server exited (${code})`)));
    readline.createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      try {
        resolve((JSON.parse(line) as { url: string }).url);
      } catch {
        /* log line */
      }
    });
  });
  child.removeAllListeners('exit');
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_traces_${crypto.randomBytes(4).toString('hex')}`;
  let adminUrl: string;
  let baseUrl: URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let dataRoot: string | undefined;
  if (process.env.DATABASE_URL) {
    baseUrl = new URL(process.env.DATABASE_URL);
    adminUrl = process.env.DATABASE_URL;
  } else {
    dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-bench-pg-'));
    const pg = await startEmbeddedPostgres({ dataDir: path.join(dataRoot, 'pg'), port: await freePort(), logger: createLogger('warn') });
    baseUrl = new URL(pg.url);
    adminUrl = pg.adminUrl;
    stopEmbedded = pg.stop;
  }
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  baseUrl.pathname = `/${name}`;
  return {
    url: baseUrl.toString(),
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      await stopEmbedded?.();
      if (dataRoot) fs.rmSync(dataRoot, { recursive: true, force: true });
    },
  };
}

/** The baseline: the same rows as plain parameterised single-row INSERTs over `connections` pooled connections. */
async function rawInsertBaseline(pool: Pool, n: number, connections: number, days: number): Promise<{ seconds: number; rate: number }> {
  await pool.query('CREATE TABLE traces_baseline (LIKE traces INCLUDING ALL)');
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let i = next++; i < n; i = next++) {
        const b = traceBody(i, days, 'baseline');
        await pool.query(
          `INSERT INTO traces_baseline (id, message_id, instance, to_phone, message, status, sent_at, payload_headers, payload_body)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [crypto.randomUUID(), b.messageId, b.instance, `+1555${String(i % 10_000_000).padStart(7, '0')}`, b.message, 'sent', b.sentAt, '{}', '{}'],
        );
      }
    }),
  );
  const seconds = ms(start) / 1000;
  await pool.query('DROP TABLE traces_baseline');
  return { seconds, rate: n / seconds };
}

async function timeHttp(url: string, runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const res = await fetch(url, { headers: { 'x-api-key': API_KEY } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    out.push(ms(start));
  }
  return out;
}

async function main(): Promise<void> {
  const total = arg('traces', 100_000);
  const baselineCount = arg('baseline', 20_000);
  const connections = arg('connections', 32);
  const days = arg('days', 30);
  const runId = crypto.randomBytes(4).toString('hex');
  const benchStart = process.hrtime.bigint();

  const database = await scratchDatabase();
  const pool = createPool(database.url, createLogger('warn'), { max: connections });
  let server: { url: string; stop(): Promise<void> } | undefined;
  try {
    await migrate(pool);
    server = await startServer(database.url);
    const base = `${server.url}/api/v1`;

    // warm-up (JIT, pool connections), not counted
    let i = 0;
    const warm = await autocannon({
      url: `${base}/traces`, method: 'POST', amount: 1000, connections,
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
      requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify(traceBody(i++, days, `${runId}-warm`)) }) }],
    });
    await pool.query('TRUNCATE traces');

    i = 0;
    const result = await autocannon({
      url: `${base}/traces`, method: 'POST', amount: total, connections, timeout: 30,
      headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
      requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify(traceBody(i++, days, runId)) }) }],
    });
    const stored = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM traces')).rows[0]?.n);
    const httpRate = result['2xx'] / result.duration;

    const baseline = baselineCount > 0 ? await rawInsertBaseline(pool, baselineCount, connections, days) : undefined;

    await pool.query('VACUUM ANALYZE traces');
    const analyticsHttp = await timeHttp(`${base}/traces/analytics?days=${days}`, 10);
    const analyticsSql: number[] = [];
    let analytics: Awaited<ReturnType<typeof traceAnalytics>> | undefined;
    for (let r = 0; r < 10; r++) {
      const start = process.hrtime.bigint();
      analytics = await traceAnalytics(pool, days);
      analyticsSql.push(ms(start));
    }
    const analytics7 = await timeHttp(`${base}/traces/analytics?days=7`, 10);
    const listInstance = await timeHttp(`${base}/traces?instance=sales&limit=50`, 10);
    const listPhone = await timeHttp(`${base}/traces?phone=${encodeURIComponent('+1 (555) 101-0001')}`, 10);
    const listStatusDeep = await timeHttp(`${base}/traces?status=read&limit=500&offset=5000`, 10);

    const figures = {
      traces: total,
      connections,
      warmup2xx: warm['2xx'],
      ingest: {
        seconds: round(result.duration, 2),
        requestsPerSecond: round(httpRate, 0),
        created2xx: result['2xx'],
        non2xx: result.non2xx,
        errors: result.errors,
        rowsStored: stored,
        latencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
      },
      rawInsertBaseline: baseline && { rows: baselineCount, seconds: round(baseline.seconds, 2), rowsPerSecond: round(baseline.rate, 0) },
      httpToRawRatio: baseline ? round(httpRate / baseline.rate, 2) : null,
      analytics: {
        days,
        totalMessages: analytics?.totalMessages,
        httpMedianMs: round(median(analyticsHttp)),
        sqlMedianMs: round(median(analyticsSql)),
        days7HttpMedianMs: round(median(analytics7)),
      },
      listMedianMs: { instance: round(median(listInstance)), phone: round(median(listPhone)), statusOffset5000Limit500: round(median(listStatusDeep)) },
      wallSeconds: round(ms(benchStart) / 1000, 1),
      machine: { cpus: os.cpus().length, loadavg1m: round(os.loadavg()[0] ?? 0, 1), node: process.version },
    };

    process.stdout.write(
      [
        `traces ingested over HTTP: ${stored}/${total} in ${figures.ingest.seconds} s = ${figures.ingest.requestsPerSecond} req/s (p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors})`,
        baseline ? `raw INSERT baseline: ${baselineCount} rows in ${figures.rawInsertBaseline?.seconds} s = ${figures.rawInsertBaseline?.rowsPerSecond} rows/s; HTTP/raw = ${figures.httpToRawRatio}` : 'raw INSERT baseline: skipped',
        `analytics (${days} days over ${analytics?.totalMessages} traces): HTTP median ${figures.analytics.httpMedianMs} ms, SQL median ${figures.analytics.sqlMedianMs} ms; 7 days HTTP median ${figures.analytics.days7HttpMedianMs} ms`,
        `list medians: instance ${figures.listMedianMs.instance} ms, phone ${figures.listMedianMs.phone} ms, status+offset 5000 limit 500 ${figures.listMedianMs.statusOffset5000Limit500} ms`,
        JSON.stringify(figures),
        '',
      ].join('\n'),
    );
    if (stored !== total || result.non2xx > 0) process.exitCode = 1;
  } finally {
    await server?.stop();
    await pool.end();
    await database.drop();
  }
}

if (process.argv.includes('--serve')) {
  serve().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
