#!/usr/bin/env node
'use strict';
// The board's assets: `npm run build:web` builds web/ with Vite into web/dist, prints the JavaScript size gzipped
// and fails when it is over the budget (350 KB gz, all chunks together). web/dist/.armada-build.json records a hash
// of the sources it was built from.
//   node scripts/build-web.js             build
//   node scripts/build-web.js --if-stale  build only when web/dist is missing or older than the sources (the root
//                                         `prepare` script, run by `npm ci`, and `armada start` / `armada api`)
// Without Vite installed (`npm ci --omit=dev`), --if-stale says so in one line and leaves web/dist as it is, unless
// --require-vite is given too (`npm run build`, which must ship the board).
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');

const root = path.join(__dirname, '..');
const webDir = path.join(root, 'web');
const distDir = path.join(webDir, 'dist');
const stampPath = path.join(distDir, '.armada-build.json');
const BUDGET_GZ_BYTES = 350 * 1024;

function say(line) {
  process.stdout.write(`build:web: ${line}\n`);
}

function listFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** A hash of everything the build reads from the repository: web/src, index.html, the Vite config, the lock file. */
function sourceHash() {
  const files = [...listFiles(path.join(webDir, 'src')), path.join(webDir, 'index.html'), path.join(webDir, 'vite.config.mts'), path.join(root, 'package-lock.json')].sort();
  const h = crypto.createHash('sha256');
  for (const f of files) {
    h.update(path.relative(root, f));
    h.update('\0');
    h.update(fs.readFileSync(f));
    h.update('\0');
  }
  return h.digest('hex');
}

function staleReason() {
  if (!fs.existsSync(path.join(webDir, 'src'))) return undefined; // no sources here (an image): nothing to build
  if (!fs.existsSync(path.join(distDir, 'index.html'))) return 'web/dist is missing';
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(stampPath, 'utf8'));
  } catch {
    return 'web/dist has no build stamp';
  }
  return stamp.sourceHash === sourceHash() ? undefined : 'web/ changed since web/dist was built';
}

function jsSizes(dir = distDir) {
  const assets = path.join(dir, 'assets');
  const html = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
  let total = 0;
  let initial = 0;
  for (const name of fs.readdirSync(assets).filter((n) => n.endsWith('.js'))) {
    const gz = zlib.gzipSync(fs.readFileSync(path.join(assets, name)), { level: 9 }).length;
    total += gz;
    if (html.includes(`/assets/${name}`)) initial += gz;
  }
  return { total, initial };
}

/** Vite's command line, or undefined when it is not installed (its package exports no bin path). */
function viteBin() {
  try {
    return path.join(path.dirname(require.resolve('vite/package.json', { paths: [root] })), 'bin', 'vite.js');
  } catch {
    return undefined;
  }
}

function build() {
  const vite = viteBin();
  if (!vite) throw new Error('vite is not installed (dev dependencies): run `npm ci` first');
  const t0 = Date.now();
  const hash = sourceHash();
  // built beside web/dist and renamed into place: a server reading web/dist (or a concurrent build) never sees half
  const tmp = path.join(webDir, `.dist-${process.pid}-${Date.now()}`);
  try {
    execFileSync(process.execPath, [vite, 'build', '--logLevel', 'warn', '--outDir', tmp, '--emptyOutDir'], { cwd: webDir, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`vite build failed (${err.status ?? err.message})`);
  }
  const { total, initial } = jsSizes(tmp);
  fs.writeFileSync(path.join(tmp, path.basename(stampPath)), `${JSON.stringify({ sourceHash: hash, builtAt: new Date().toISOString(), jsGzipBytes: total, initialJsGzipBytes: initial }, null, 2)}\n`);
  const old = `${tmp}-old`;
  if (fs.existsSync(distDir)) fs.renameSync(distDir, old);
  fs.renameSync(tmp, distDir);
  fs.rmSync(old, { recursive: true, force: true });
  const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
  say(`web/dist built in ${((Date.now() - t0) / 1000).toFixed(1)} s; JavaScript ${kb(total)} gzipped (first load ${kb(initial)}; budget ${kb(BUDGET_GZ_BYTES)})`);
  if (total > BUDGET_GZ_BYTES) throw new Error(`the JavaScript bundle is ${kb(total)} gzipped, over the ${kb(BUDGET_GZ_BYTES)} budget`);
}

function main() {
  if (process.argv.includes('--if-stale')) {
    const reason = staleReason();
    if (!reason) return;
    if (!viteBin() && !process.argv.includes('--require-vite')) {
      say(`${reason} but vite is not installed (npm ci --omit=dev?): the board is not built`);
      return;
    }
    say(`${reason}: building it`);
  }
  build();
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    say(`failed: ${err.message}`);
    process.exit(1);
  }
}

module.exports = { sourceHash, staleReason, jsSizes };
