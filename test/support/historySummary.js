'use strict';
// What each recorded history is: its workflow type and the patch ids its run recorded (core_patch markers). Runs in a
// plain Node process like replayHistories.js (protobufjs's type registry does not survive jest's module sandbox).
// Usage: node historySummary.js <history.json>… → one JSON line [{ file, workflowType, patches }].
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
  return { file: path.basename(f), workflowType: history.events[0].workflowExecutionStartedEventAttributes.workflowType.name, patches: [...patches].sort() };
});
process.stdout.write(`${JSON.stringify(summaries)}\n`);
