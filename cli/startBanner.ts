/**
 * What `armada start` prints when it is up and when it has stopped. With JSON logs (stdout not a terminal, or
 * ARMADA_LOG_FORMAT=json) it is one JSON line in the log stream's shape (`level`, `time`, `msg`) with `event`
 * `ready` / `stopped`, for log collectors and scripts; with pretty logs, lines for a person. The generated API key is
 * shown only to a person at a terminal: a pipe or a file (a log collector) gets the key file's path instead.
 */
import type { LogFormat } from '../lib/logger';
import { eventLine } from './eventLine';

export interface ReadyInfo {
  version: string;
  startupSeconds: number;
  home: string;
  /** service name → URL, as the services listen */
  addresses: Record<string, string>;
  temporal: { address: string; uiUrl?: string };
  /** the embedded server's port, or null for DATABASE_URL */
  postgresPort: number | null;
  /** where the shared API key is kept; undefined when it comes from the environment */
  apiKeyFile?: string;
  /** the key, when this start generated it */
  generatedApiKey?: string;
}

export interface BannerOutput {
  format: LogFormat;
  /** whether stdout is a terminal */
  tty: boolean;
}

/** The banner printed once everything runs. */
export function readyBanner(info: ReadyInfo, out: BannerOutput): string {
  if (out.format === 'json') {
    return eventLine('ready', 'armada is up', {
      version: info.version,
      startupSeconds: Number(info.startupSeconds.toFixed(1)),
      home: info.home,
      addresses: info.addresses,
      temporal: info.temporal,
      postgres: info.postgresPort === null ? 'DATABASE_URL' : { embedded: true, port: info.postgresPort },
      ...(info.apiKeyFile ? { apiKeyFile: info.apiKeyFile, apiKeyGenerated: info.generatedApiKey !== undefined } : {}),
    });
  }
  const lines = [
    `armada ${info.version} is up in ${info.startupSeconds.toFixed(1)} s (data in ${info.home})`,
    ...Object.entries(info.addresses).map(([name, addr]) => `  ${name.padEnd(14)} ${addr}`),
    `  temporal       ${info.temporal.address}${info.temporal.uiUrl ? ` (UI ${info.temporal.uiUrl})` : ''}`,
    `  postgres       ${info.postgresPort === null ? 'DATABASE_URL' : `embedded, port ${info.postgresPort}`}`,
  ];
  if (info.generatedApiKey && out.tty) {
    lines.push(`  API key (X-API-Key for scheduler, agents, traces; shown once, stored in ${info.apiKeyFile}):`, `    ${info.generatedApiKey}`);
  } else if (info.generatedApiKey) {
    lines.push(`  API key (X-API-Key for scheduler, agents, traces): generated, stored in ${info.apiKeyFile}`);
  }
  return `${lines.join('\n')}\nPress Ctrl-C to stop.\n`;
}

/** The line printed after a clean stop. */
export function stoppedBanner(out: BannerOutput): string {
  return out.format === 'json' ? eventLine('stopped', 'armada stopped', {}) : 'armada stopped\n';
}
