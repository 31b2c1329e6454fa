/** Keys generated on first start and kept in $ARMADA_HOME, so a restart keeps the same API and encryption keys. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ArmadaConfig } from './config';
import { ConfigError } from './errors';
import { fsyncDirectory, writeTempDurably } from './fs/durableWrite';

export interface ResolvedKeys {
  scheduler: string;
  agents: string;
  traces: string;
  /** Undefined = the task service runs without authentication (local mode). */
  task?: string;
  encryption: Buffer;
  /** Set when this call generated the shared API key, so the caller prints it once. */
  generatedApiKey?: string;
  /** Where the shared API key is kept ($ARMADA_HOME/api-key); undefined when the environment gives the keys. */
  apiKeyFile?: string;
}

/** What to do about an empty key file: an empty key would be used as one (an empty X-API-Key would match it). */
function emptyKeyAdvice(file: string): string {
  return path.basename(file) === 'encryption-key'
    ? `${file} is empty: restore it from a backup; deleting it generates a new key, and the secrets stored with the old one (source API keys, code-host tokens, webhook secrets, repository URL credentials) can no longer be read`
    : `${file} is empty: delete it to generate a new key (clients then need the new one), or restore it`;
}

/**
 * Reads a key file, or writes a new 32-byte hex key there (mode 0600) when absent: a temp file fsynced, linked into
 * place (so a concurrent first start uses the winner's key), and the directory fsynced, so a crash right after a
 * start cannot leave an empty key file behind while data encrypted with the key is already in PostgreSQL.
 */
function readOrCreateKey(file: string): { key: string; created: boolean } {
  const read = (): string => {
    const key = fs.readFileSync(file, 'utf8').trim();
    if (!key) throw new ConfigError(emptyKeyAdvice(file));
    return key;
  };
  try {
    return { key: read(), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  const key = crypto.randomBytes(32).toString('hex');
  const tmp = writeTempDurably(dir, path.basename(file), `${key}\n`, 0o600);
  try {
    fs.linkSync(tmp, file); // fails if another process won the race: use its key
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { key: read(), created: false };
  } finally {
    fs.rmSync(tmp, { force: true });
    fsyncDirectory(dir);
  }
  return { key, created: true };
}

export function resolveKeys(config: ArmadaConfig): ResolvedKeys {
  let shared = config.apiKeys.default;
  let generatedApiKey: string | undefined;
  let apiKeyFile: string | undefined;
  const needShared = !(config.apiKeys.scheduler && config.apiKeys.agents && config.apiKeys.traces);
  if (!shared && needShared) {
    apiKeyFile = path.join(config.home, 'api-key');
    const r = readOrCreateKey(apiKeyFile);
    shared = r.key;
    if (r.created) generatedApiKey = r.key;
  }
  const enc = config.encryptionKey ?? readOrCreateKey(path.join(config.home, 'encryption-key')).key;
  return {
    scheduler: config.apiKeys.scheduler ?? (shared as string),
    agents: config.apiKeys.agents ?? (shared as string),
    traces: config.apiKeys.traces ?? (shared as string),
    task: config.apiKeys.task,
    encryption: crypto.createHash('sha256').update(enc).digest(),
    generatedApiKey,
    apiKeyFile,
  };
}

/** The encryption key, resolved on first use (workers need it only for the few activities that open secrets). */
export function lazyEncryptionKey(config: ArmadaConfig): () => Buffer {
  let key: Buffer | undefined;
  return () => {
    key ??= resolveKeys(config).encryption;
    return key;
  };
}

/**
 * The shared API key a client on this host uses to reach the services of `armada start`: ARMADA_SCHEDULER_API_KEY
 * (for the scheduler), ARMADA_API_KEY, else the key stored in $ARMADA_HOME/api-key. Never generates one; undefined
 * when there is none.
 */
export function clientApiKey(config: ArmadaConfig, service: 'scheduler' | 'agents' | 'traces'): string | undefined {
  const fromEnv = config.apiKeys[service] ?? config.apiKeys.default;
  if (fromEnv) return fromEnv;
  try {
    return fs.readFileSync(path.join(config.home, 'api-key'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** What to do when clientApiKey found no key for `service`: the variables to set, or the key file that is missing. */
export function missingClientKeyAdvice(config: ArmadaConfig, service: 'scheduler' | 'agents' | 'traces'): string {
  return `set ARMADA_API_KEY (or ARMADA_${service.toUpperCase()}_API_KEY), or use the ARMADA_HOME whose armada start wrote it (${path.join(config.home, 'api-key')} does not exist)`;
}

/** Constant-time comparison of a presented key with the expected one. */
export function keysMatch(presented: string | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = crypto.createHash('sha256').update(presented).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}
