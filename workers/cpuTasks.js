'use strict';
// piscina worker: CPU-bound parsing off the API's event loop. Plain JS that loads the TypeScript modules through
// tsx's CommonJS hook, like bin/armada (compiled runs load the .js beside them).
const fs = require('node:fs');
const path = require('node:path');
const compiled = fs.existsSync(path.join(__dirname, '..', 'lib', 'attempts', 'diffParse.js'));
if (!compiled) require('tsx/cjs/api').register();
const ext = compiled ? '.js' : '.ts';
const { parseUnifiedDiff } = require(`../lib/attempts/diffParse${ext}`);
const { diffEventBody } = require(`../lib/attempts/diffEvent${ext}`);
const { createParser } = require(`../activities/agent/parsers/index${ext}`);

/** { kind: 'diff', text } → Diff; { kind: 'diffEvent', text } → DiffEventBody; { kind: 'normalize', format, lines } → LogEntry[] */
module.exports = function run(task) {
  if (task.kind === 'diff') return parseUnifiedDiff(task.text);
  if (task.kind === 'diffEvent') return diffEventBody(task.text);
  if (task.kind === 'ping') return true;
  if (task.kind === 'normalize') {
    const parser = createParser(task.format);
    const out = [];
    for (const l of task.lines) out.push(...parser.line(l.stream, l.line).entries);
    return out;
  }
  throw new Error(`unknown task kind ${task.kind}`);
};
