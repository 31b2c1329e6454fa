'use strict';
// Bundles the workflow code in a worker thread (workers/createWorker.ts `bundleWorkflows`): webpack's allocations
// live and die with this thread's heap instead of staying in the calling process's old space until a later
// mark-compact (V8's memory reducer ran one of ~200 ms in `armada infra` ~25 s after it bundled, in the middle of
// bench/logs.ts; docs/benchmarks.md "Session 55"). Plain JavaScript: the thread runs without tsx, and webpack reads
// the workflow sources itself.
const { parentPort, workerData } = require('node:worker_threads');
const { bundleWorkflowCode } = require('@temporalio/worker');

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
bundleWorkflowCode({ workflowsPath: workerData.workflowsPath, logger: silent }).then(
  ({ code }) => parentPort.postMessage({ code }),
  (err) => parentPort.postMessage({ error: err instanceof Error ? err.stack || err.message : String(err) }),
);
