'use strict';
// piscina worker: CPU-bound parsing off the API's event loop. Plain JS that loads the TypeScript modules through
// tsx's CommonJS hook, like bin/armada.
require('tsx/cjs/api').register();
const { parseUnifiedDiff } = require('../lib/attempts/diffParse.ts');
const { createParser } = require('../activities/agent/parsers/index.ts');

/** { kind: 'diff', text } → Diff; { kind: 'normalize', format, lines: [{stream, line}] } → LogEntry[] */
module.exports = function run(task) {
  if (task.kind === 'diff') return parseUnifiedDiff(task.text);
  if (task.kind === 'normalize') {
    const parser = createParser(task.format);
    const out = [];
    for (const l of task.lines) out.push(...parser.line(l.stream, l.line).entries);
    return out;
  }
  throw new Error(`unknown task kind ${task.kind}`);
};
