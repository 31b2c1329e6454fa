'use strict';
// Repository inspection off the API process (lib/fs/repoInspector.ts): this small process runs the git commands of
// GET /api/filesystem/git-repos, so forking git never copies the API's large address space nor blocks its event
// loop. Plain JS that loads the TypeScript module through tsx's CommonJS hook, like bin/armada.
require('tsx/cjs/api').register();
const { inspectRepository } = require('../lib/fs/gitDiscovery.ts');

process.on('message', (m) => {
  inspectRepository(m.dir).then(
    (record) => process.send({ id: m.id, record }),
    (err) => process.send({ id: m.id, error: err?.message ? err.message : String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
