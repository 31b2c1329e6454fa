/**
 * `armada start` and `armada api` build the board when web/dist is missing or older than web/ (a checkout whose
 * sources changed since `npm ci` built it): scripts/build-web.js --if-stale, one line (on stderr: stdout stays the log) when it builds. An installation
 * without web/ sources (the image, a dist/ build) or with ARMADA_WEB_DIR set serves what it has.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ArmadaConfig } from '../lib/config';
import type { Logger } from '../lib/logger';

const ROOT = path.join(__dirname, '..');

export function ensureWebAssets(config: ArmadaConfig, logger: Logger): void {
  const script = path.join(ROOT, 'scripts', 'build-web.js');
  if (config.webDir !== path.join(ROOT, 'web', 'dist') || !fs.existsSync(script) || !fs.existsSync(path.join(ROOT, 'web', 'src'))) return;
  try {
    execFileSync(process.execPath, [script, '--if-stale'], { cwd: ROOT, stdio: ['ignore', process.stderr, 'inherit'], timeout: 300_000 });
  } catch (err) {
    // the API works without the board; `/` says how to build it
    logger.warn({ err: { message: (err as Error).message } }, 'the web board could not be built (npm run build:web)');
  }
}
