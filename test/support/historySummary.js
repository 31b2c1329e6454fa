'use strict';
// What each recorded history is: its workflow type, the patch ids its run recorded (core_patch markers) and the code
// paths its input fixed (`paths`, null when absent: patches asked with inEffect() are in effect from a `since` without
// a marker). Runs in a plain Node process like replayHistories.js (protobufjs's type registry does not survive jest's
// module sandbox). Usage: node historySummary.js <history.json>… → one JSON line [{ file, workflowType, patches, paths }].
const fs = require('node:fs');
const path = require('node:path');
const { temporal } = require('@temporalio/proto');

const summaries = process.argv.slice(2).map((f) => {
  const history = temporal.api.history.v1.History.decode(Buffer.from(JSON.parse(fs.readFileSync(f, 'utf8')).historyBase64, 'base64'));
  const patches = new Set();
  for (const e of history.events) {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    if (data) patches.add(JSON.parse(Buffer.from(data).toString('utf8')).id);
  }
  const started = history.events[0].workflowExecutionStartedEventAttributes;
  const first = started.input?.payloads?.[0];
  let input = null;
  try {
    input = first?.data ? JSON.parse(Buffer.from(first.data).toString('utf8')) : null;
  } catch {
    input = null; // not JSON (no workflow of ours takes such an input): no paths
  }
  const paths = input && typeof input === 'object' && typeof input.paths === 'number' ? input.paths : null;
  return { file: path.basename(f), workflowType: started.workflowType.name, patches: [...patches].sort(), paths };
});
process.stdout.write(`${JSON.stringify(summaries)}\n`);
