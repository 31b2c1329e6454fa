'use strict';
// Replays history JSON files with Worker.runReplayHistories in a plain Node process (protobufjs's type registry does
// not survive jest's module sandbox). Usage: node replayHistories.js <bundle.js> <history.json>… → one JSON line.
const fs = require('node:fs');
const path = require('node:path');
const { Worker, Runtime, DefaultLogger } = require('@temporalio/worker');
const { temporal } = require('@temporalio/proto');

async function main() {
  const [bundle, ...files] = process.argv.slice(2);
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  const histories = files.map((f) => ({
    workflowId: path.basename(f, '.json'),
    history: temporal.api.history.v1.History.decode(Buffer.from(JSON.parse(fs.readFileSync(f, 'utf8')).historyBase64, 'base64')),
  }));
  const results = [];
  // workflowRunWorkflow calls the worker's `scheduler` sink (never on replay): registered so the replay knows it
  const sinks = { scheduler: { prefetchDefinition: { fn() {} } } };
  for await (const r of Worker.runReplayHistories({ workflowBundle: { codePath: bundle }, sinks }, histories)) {
    results.push({ workflowId: r.workflowId, error: r.error ? String(r.error.message || r.error) : null });
  }
  process.stdout.write(`${JSON.stringify(results)}\n`);
}
main().catch((err) => {
  process.stderr.write(`${err?.stack ? err.stack : err}\n`);
  process.exit(1);
});
