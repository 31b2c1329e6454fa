#!/usr/bin/env node
'use strict';
// The production build: `npm run build` (or `node scripts/build.js --out DIR`).
// 1. tsc compiles api, workflows, activities, workers, lib and cli to DIR (default dist/), same layout as the sources;
// 2. the files read at run time beside the sources are copied: SQL migrations, the worker-thread/forked .js helpers,
//    package.json (the version) and bin/armada (so `node DIR/bin/armada` and MCP tool commands run compiled code);
// 3. the workflow bundle is prebuilt from the compiled workflows into DIR/workflow-bundle.js (workers load it);
// 4. the board (web/, scripts/build-web.js) is built when stale and copied to DIR/web/dist (served at `/`).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const argi = process.argv.indexOf('--out');
const out = path.resolve(argi === -1 ? path.join(root, 'dist') : process.argv[argi + 1]);

function step(label, fn) {
  const t0 = Date.now();
  fn();
  process.stdout.write(`build: ${label} (${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
}

step(`tsc -> ${out}`, () => {
  fs.rmSync(out, { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit', cwd: root });
});

step('copy runtime assets', () => {
  fs.cpSync(path.join(root, 'lib', 'db', 'migrations'), path.join(out, 'lib', 'db', 'migrations'), { recursive: true });
  for (const f of ['cpuTasks.js', 'repoInspector.js', 'launcher.js', 'workflowBundler.js']) fs.copyFileSync(path.join(root, 'workers', f), path.join(out, 'workers', f));
  fs.copyFileSync(path.join(root, 'package.json'), path.join(out, 'package.json'));
  fs.mkdirSync(path.join(out, 'bin'), { recursive: true });
  fs.copyFileSync(path.join(root, 'bin', 'armada'), path.join(out, 'bin', 'armada'));
  fs.chmodSync(path.join(out, 'bin', 'armada'), 0o755);
  // Outside the repository (a test's temp dir), the compiled code resolves packages through DIR/node_modules: one
  // link per package of the repository's node_modules, except tsx, so a compiled run that still needed tsx fails.
  const rel = path.relative(root, out);
  if (rel.startsWith('..') || path.isAbsolute(rel)) {
    const nm = path.join(out, 'node_modules');
    fs.mkdirSync(nm, { recursive: true });
    for (const name of fs.readdirSync(path.join(root, 'node_modules'))) {
      if (name !== 'tsx' && name !== '.bin') fs.symlinkSync(path.join(root, 'node_modules', name), path.join(nm, name));
    }
  }
});

step('workflow bundle', () => {
  execFileSync(process.execPath, [path.join(out, 'bin', 'armada'), 'bundle', '--out', path.join(out, 'workflow-bundle.js')], { stdio: 'inherit', cwd: root, env: { ...process.env, ARMADA_RUNTIME: 'dist' } });
});

step('web board -> web/dist', () => {
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build-web.js'), '--if-stale', '--require-vite'], { stdio: 'inherit', cwd: root });
  fs.cpSync(path.join(root, 'web', 'dist'), path.join(out, 'web', 'dist'), { recursive: true });
});
