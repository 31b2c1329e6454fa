'use strict';
// The compiled copy of the sources that `npm test` starts its `armada` processes from (docs/testing.md, "Compiled
// processes"). Under tsx each process spent about a second more CPU than the compiled build (session 47: ~190
// processes per run, ~190 s of CPU on 2 cores), so scripts/test.js transpiles the sources once before jest with SWC
// (the transpiler jest itself runs them through, same options) into a temp dir and names it in ARMADA_TEST_BUILD.
// armadaBin() gives a test that build's bin/armada only while the build is fresh: its manifest records the size and
// modification time of every source file it was made from, taken before they were read; any difference (a source
// edited during the run, a `git checkout`) and the test runs bin/armada under tsx as without a build, never the
// stale build. `npx jest <file>` (no ARMADA_TEST_BUILD) always runs bin/armada under tsx.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
/** what `npm run build` compiles (tsconfig.build.json), plus what bin/armada reads beside them */
const SOURCE_DIRS = ['api', 'workflows', 'activities', 'workers', 'lib', 'cli'];
const SOURCE_FILES = ['bin/armada', 'package.json'];
const MANIFEST = 'armada-test-build.json';
const REPO_BIN = path.join(ROOT, 'bin', 'armada');

function walk(dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile()) out.push(path.relative(ROOT, p));
  }
  return out;
}

/** The source files a build is made from, relative to the repository, sorted. */
function sourceFiles() {
  const files = [];
  for (const d of SOURCE_DIRS) walk(path.join(ROOT, d), files);
  return [...files, ...SOURCE_FILES].sort();
}

/** Names, sizes and modification times of the source files: any edit, added or removed file changes it. */
function fingerprint(files = sourceFiles()) {
  const h = crypto.createHash('sha256');
  for (const f of files) {
    const s = fs.statSync(path.join(ROOT, f));
    h.update(`${f}\0${s.size}\0${s.mtimeMs}\n`);
  }
  return h.digest('hex');
}

/**
 * Transpiles the sources into `out` (emptied first), the layout of `npm run build`'s dist/: .ts → .js, other files
 * copied; packages resolve through out/node_modules (a link per package of the repository's, except tsx, so a
 * compiled process that still needed tsx fails), the board through out/web (a link to web/). No type check (the CI
 * run's typecheck does that), no workflow bundle (the test run's own, ARMADA_WORKFLOW_BUNDLE, serves both runtimes).
 */
async function buildForTests(out) {
  const { transformFile } = require('@swc/core');
  const files = sourceFiles();
  const print = fingerprint(files);
  fs.rmSync(out, { recursive: true, force: true });
  // import() stays a dynamic import, as under tsx (a require() of an ES module fails on Node 20; no source imports one
  // today: lib/runtime/embeddedPostgres.ts finds its binaries by resolving, as `npm run build`'s output must too)
  const options = { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs', ignoreDynamic: true }, swcrc: false, configFile: false };
  const dirs = new Set(files.map((f) => path.dirname(path.join(out, f))));
  for (const d of dirs) fs.mkdirSync(d, { recursive: true });
  await Promise.all(
    files.map(async (f) => {
      const src = path.join(ROOT, f);
      if (f.endsWith('.d.ts')) return;
      if (f.endsWith('.ts')) {
        const { code } = await transformFile(src, { ...options, filename: src });
        fs.writeFileSync(path.join(out, `${f.slice(0, -3)}.js`), code);
      } else {
        fs.copyFileSync(src, path.join(out, f));
      }
    }),
  );
  fs.chmodSync(path.join(out, 'bin', 'armada'), 0o755);
  const nm = path.join(out, 'node_modules');
  fs.mkdirSync(nm);
  for (const name of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
    if (name !== 'tsx' && name !== '.bin') fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(nm, name));
  }
  fs.symlinkSync(path.join(ROOT, 'web'), path.join(out, 'web'));
  fs.writeFileSync(path.join(out, MANIFEST), `${JSON.stringify({ fingerprint: print })}\n`);
}

/** The bin/armada a test starts: ARMADA_TEST_BUILD's while that build is fresh, else the repository's (tsx). */
function armadaBin(build = process.env.ARMADA_TEST_BUILD) {
  if (!build) return REPO_BIN;
  try {
    const { fingerprint: built } = JSON.parse(fs.readFileSync(path.join(build, MANIFEST), 'utf8'));
    if (built === fingerprint()) return path.join(build, 'bin', 'armada');
  } catch {
    /* no build there (removed, or it failed half-way) */
  }
  return REPO_BIN;
}

module.exports = { buildForTests, armadaBin, fingerprint, REPO_BIN };
