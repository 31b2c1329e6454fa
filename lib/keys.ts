/** Keys generated on first start and kept in $ARMADA_HOME, so a restart keeps the same API and encryption keys. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ArmadaConfig } from './config';

export interface ResolvedKeys {
  scheduler: string;
  agents: string;
  traces: string;
  /** Undefined = the task service runs without authentication (local mode). */
  task?: string;
  encryption: Buffer;
  /** Set when this call generated the shared API key, so the caller prints it once. */
  generatedApiKey?: string;
}

/** Reads a key file, or writes a new 32-byte hex key there (mode 0600) when absent. Atomic: temp file + rename. */
function readOrCreateKey(file: string): { key: string; created: boolean } {
  try {
    return { key: fs.readFileSync(file, 'utf8').trim(), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const key = crypto.randomBytes(32).toString('hex');
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${key}\n`, { mode: 0o600 });
  try {
    fs.linkSync(tmp, file); // fails if another process won the race: use its key
    return { key, created: true };
  } catch {
    return { key: fs.readFileSync(file, 'utf8').trim(), created: false };
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

export function resolveKeys(config: ArmadaConfig): ResolvedKeys {
  let shared = config.apiKeys.default;
  let generatedApiKey: string | undefined;
  const needShared = !(config.apiKeys.scheduler && config.apiKeys.agents && config.apiKeys.traces);
  if (!shared && needShared) {
    const r = readOrCreateKey(path.join(config.home, 'api-key'));
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
  };
}

/** Constant-time comparison of a presented key with the expected one. */
export function keysMatch(presented: string | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = crypto.createHash('sha256').update(presented).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}
