/**
 * What `armada` says when a port it needs is busy or the Temporal dev server's SQLite file is damaged: one line naming
 * the variable or the file and what to do. A busy HTTP port used to read `listen EADDRINUSE: address already in use
 * 127.0.0.1:22000`, a busy Temporal port `temporal dev server exited … bind: address already in use`, and a damaged
 * temporal.db `… database disk image is malformed …`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../lib/logger';
import { resolveTemporalCli, startTemporalDevServer } from '../../lib/runtime/temporalDevServer';
import { ARMADA_BIN } from '../support/armadaProcess';
const { freePort } = require('../support/ports') as { freePort(): Promise<number> };

jest.setTimeout(120_000);

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-messages-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A port taken by a server of this test. Its close ends the connections it accepted too (one that a process started
 * here made to the taken port): server.close() alone left it open, unread, and it held the jest worker past the run's end
 * until jest force-exited it (ci52b, ci52c).
 */
async function listening(): Promise<{ port: number; close(): void }> {
  const accepted = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    accepted.add(socket);
    socket.on('close', () => accepted.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const socket of accepted) socket.destroy();
      server.close();
    },
  };
}

async function devServerError(dbFile: string, port: number): Promise<string> {
  const cli = await resolveTemporalCli(process.env.TEMPORAL_CLI_PATH || 'temporal', process.env.ARMADA_TOOLS_DIR || os.tmpdir(), () => undefined);
  const logger = createLogger('error', 'armada', { write: () => undefined });
  try {
    const dev = await startTemporalDevServer({ cliPath: cli, toolsDir: os.tmpdir(), onProgress: () => undefined, dbFile, ip: '127.0.0.1', port, uiPort: null, namespace: 'default', logger, readyTimeoutMs: 60_000 });
    await dev.stop();
    return 'started';
  } catch (err) {
    return (err as Error).message;
  }
}

test('a busy HTTP port names its variable', async () => {
  const taken = await listening();
  try {
    const env = { ...process.env, ARMADA_HOME: dir, ARMADA_LOG_LEVEL: 'error', DATABASE_URL: 'postgres://armada@127.0.0.1:1/armada', TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`, ARMADA_TRACES_PORT: String(taken.port) };
    const r = spawnSync(process.execPath, [ARMADA_BIN, 'api', '--service', 'traces'], { env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(`armada: port ${taken.port} on 127.0.0.1 (the traces service) is in use: stop what listens there, or set ARMADA_TRACES_PORT to a free port`);
  } finally {
    taken.close();
  }
});

test('a busy Temporal port names ARMADA_TEMPORAL_PORT', async () => {
  const taken = await listening();
  try {
    const message = await devServerError(path.join(dir, 'temporal.db'), taken.port);
    expect(message).toMatch(new RegExp(`port ${taken.port} .*is in use.*stop what listens there, or set ARMADA_TEMPORAL_PORT to a free port`));
    expect(message.split('\n')).toHaveLength(1);
  } finally {
    taken.close();
  }
});

test('a damaged temporal.db names the file and what removing it costs', async () => {
  const dbFile = path.join(dir, 'temporal.db');
  fs.writeFileSync(dbFile, Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 0xab)]));
  const message = await devServerError(dbFile, await freePort());
  expect(message).toContain(dbFile);
  expect(message).toMatch(/damaged.*move it away.*PostgreSQL/);
  expect(message.split('\n')).toHaveLength(1);
});

/** A SQLite file with a table of its own and none of Temporal's: what a first start killed while creating them leaves. */
function tablesMissing(dbFile: string): void {
  const r = spawnSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE partial (x)"); c.commit()', dbFile], { encoding: 'utf8' });
  expect(r.status).toBe(0);
}

test("a first start killed before it was ready leaves a mark; the next start makes the file again and is ready (ci50b: 'no such table: cluster_metadata_info' for good)", async () => {
  const dbFile = path.join(dir, 'temporal.db');
  tablesMissing(dbFile);
  fs.writeFileSync(`${dbFile}.initializing`, 'left by a first start killed before it was ready\n');
  expect(await devServerError(dbFile, await freePort())).toBe('started');
  expect(fs.existsSync(`${dbFile}.initializing`)).toBe(false); // removed once ready
  const tables = spawnSync('python3', ['-c', 'import sqlite3,sys; print(",".join(r[0] for r in sqlite3.connect(sys.argv[1]).execute("select name from sqlite_master where type=\'table\'")))', dbFile], { encoding: 'utf8' }).stdout;
  expect(tables.split(',')).toContain('cluster_metadata_info');
  expect(tables.split(',')).not.toContain('partial');
});

test('a temporal.db lacking its tables without that mark (a file of its own, or cut short before marks) is kept and named, with what to do', async () => {
  const dbFile = path.join(dir, 'temporal.db');
  tablesMissing(dbFile);
  const message = await devServerError(dbFile, await freePort());
  expect(message).toMatch(new RegExp(`^temporal dev server did not start: its SQLite file ${dbFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} lacks tables \\(no such table: \\w+.*move it away.*start again$`));
  expect(message.split('\n')).toHaveLength(1);
  expect(fs.existsSync(dbFile)).toBe(true);
});
