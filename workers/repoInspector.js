'use strict';
// Repository inspection off the API process (lib/fs/repoInspector.ts): this small process runs the git commands of
// GET /api/filesystem/git-repos, so forking git never copies the API's large address space nor blocks its event
// loop. Plain JS that loads the TypeScript module through tsx's CommonJS hook, like bin/armada (compiled runs load the
// .js beside it, as workers/cpuTasks.js does: a compiled build has neither the .ts nor, outside the repository, tsx).
const fs = require('node:fs');
const path = require('node:path');
const compiled = fs.existsSync(path.join(__dirname, '..', 'lib', 'fs', 'gitDiscovery.js'));
if (!compiled) require('tsx/cjs/api').register();
const { inspectRepository } = require(`../lib/fs/gitDiscovery${compiled ? '.js' : '.ts'}`);

process.on('message', (m) => {
  // null (no longer the directory the walk found: m.found) is sent as null, a record the caller leaves out
  inspectRepository(m.dir, m.found).then(
    (record) => process.send({ id: m.id, record }),
    (err) => process.send({ id: m.id, error: err?.message ? err.message : String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
