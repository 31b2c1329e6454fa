#!/usr/bin/env node
'use strict';
/**
 * Adds the platform-specific optional packages (e.g. @swc/core-darwin-arm64) that `npm install` leaves out of
 * package-lock.json when the registry it talks to serves only this machine's platform. Without these entries
 * `npm ci` refuses the lock ("Missing: … from lock file"). Each added entry is gated by its os/cpu (and libc),
 * so npm skips it on every other platform, exactly as with a lock written against the full registry.
 * Run it after every `npm install` that changes the lock: `node scripts/complete-lockfile.js`.
 */
const fs = require('node:fs');
const path = require('node:path');

const lockPath = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix', 'openharmony', 'wasi'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 'ppc64le', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32'];

function platformOf(name) {
  const tokens = name.split('/').pop().split('-');
  let os = tokens.find((t) => OS.includes(t));
  if (!os && tokens.includes('win32')) os = 'win32';
  if (!os && tokens.includes('macos')) os = 'darwin';
  if (!os && tokens.includes('windows')) os = 'win32';
  let cpu = tokens.find((t) => CPU.includes(t));
  if (!cpu && tokens.includes('armv7')) cpu = 'arm';
  if (!cpu && (tokens.includes('gnueabihf') || tokens.includes('musleabihf') || tokens.includes('eabi'))) cpu = 'arm';
  if (!cpu && tokens.includes('universal')) cpu = undefined;
  const libc = tokens.includes('musl') || tokens.some((t) => t.startsWith('musl')) ? 'musl' : tokens.includes('gnu') || tokens.some((t) => t.startsWith('gnu')) ? 'glibc' : undefined;
  return { os, cpu, libc };
}

let added = 0;
for (const [key, pkg] of Object.entries(lock.packages)) {
  for (const [dep, spec] of Object.entries(pkg.optionalDependencies ?? {})) {
    const base = key ? `${key}/node_modules/${dep}` : `node_modules/${dep}`;
    if (lock.packages[base] || lock.packages[`node_modules/${dep}`]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os && !cpu) continue; // not a platform package: leave it to npm
    const entry = { version: spec.replace(/^[=^~]/, ''), optional: true };
    if (pkg.dev) entry.dev = true;
    if (os) entry.os = [os];
    if (cpu) entry.cpu = [cpu];
    if (libc && os === 'linux') entry.libc = [libc];
    lock.packages[`node_modules/${dep}`] = entry;
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
fs.writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`complete-lockfile: added ${added} platform entries\n`);
