/** Parsers on sample output of each agent format (test/fixtures/agent-output), and profile resolution. */
import fs from 'node:fs';
import path from 'node:path';
import { createParser, type ParsedLine } from '../../activities/agent/parsers';
import { knownAgentNames, resolveAgentProfile } from '../../lib/agents/profiles';
import { parseUnifiedDiff, splitRows } from '../../lib/attempts/diffParse';
import { safeRelativePath } from '../../lib/attempts/gitDiff';
import { testConfigFrom } from '../support/unitConfig';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'agent-output', name), 'utf8').split('\n').filter(Boolean);

function run(format: string, file: string, stream: 'stdout' | 'stderr' = 'stdout') {
  const p = createParser(format);
  const out: ParsedLine[] = fixture(file).map((l) => p.line(stream, l, new Date('2025-01-01T00:00:00Z')));
  const last = <K extends keyof ParsedLine>(k: K) => out.map((o) => o[k]).filter((v) => v !== undefined).at(-1) as ParsedLine[K];
  return { entries: out.flatMap((o) => o.entries), tokens: last('tokens'), cost: last('cost'), summary: last('summary'), sessionId: last('sessionId') };
}

describe('agent output parsers', () => {
  test('text: each line is an entry; stderr lines are warnings or errors', () => {
    const r = run('text', 'text.txt');
    expect(r.entries.map((e) => [e.level, e.message, e.source])).toEqual([
      ['info', 'Reading the task', 'stdout'],
      ['info', 'warning: no tests found', 'stdout'],
      ['info', 'Wrote src/greet.ts', 'stdout'],
    ]);
    const p = createParser('text');
    expect(p.line('stderr', 'Error: boom').entries[0]?.level).toBe('error');
    expect(p.line('stderr', 'deprecated flag').entries[0]?.level).toBe('warn');
  });

  test('claude stream-json: text, tool uses with file metadata, tokens, cost, summary, session', () => {
    const r = run('claude-stream-json', 'claude-stream-json.jsonl');
    expect(r.sessionId).toBe('9f1c2d3e-0000-4a4a-9b9b-123456789abc');
    expect(r.entries.find((e) => e.source === 'assistant')?.message).toBe("I'll add the greeting function.");
    expect(r.entries.filter((e) => e.source === 'tool').map((e) => e.metadata)).toEqual([
      { action: 'Write', file: '/tmp/wt/src/greet.ts' },
      { action: 'Bash', command: 'npm test' },
    ]);
    expect(r.tokens).toEqual({ input: 3715, output: 79 });
    expect(r.cost).toBe(0.0123);
    expect(r.summary).toBe('Added greet() in src/greet.ts; tests pass.');
    expect(r.entries.at(-1)).toMatchObject({ level: 'info', source: 'result' });
    for (const e of r.entries) expect(e).toEqual(expect.objectContaining({ level: expect.any(String), message: expect.any(String), timestamp: '2025-01-01T00:00:00.000Z', source: expect.any(String) }));
  });

  test('codex exec --json: messages, commands, file changes, usage', () => {
    const r = run('codex-json', 'codex-json.jsonl');
    expect(r.sessionId).toBe('0199a213-81c0-7800-8aa1-bbab2a035a53');
    expect(r.entries.filter((e) => e.source === 'tool').map((e) => e.message)).toEqual(['$ bash -lc ls (exit 0)', 'add src/greet.ts', 'update README.md']);
    expect(r.tokens).toEqual({ input: 24763, output: 122 });
    expect(r.summary).toBe('Added src/greet.ts and documented it in README.md.');
  });

  test('gemini stream-json: deltas joined per line, tool use, stats', () => {
    const r = run('gemini-stream-json', 'gemini-stream-json.jsonl');
    expect(r.entries.filter((e) => e.source === 'assistant').map((e) => e.message)).toEqual(['I will create the file now.', 'Done: src/greet.ts exists.']);
    expect(r.entries.find((e) => e.source === 'tool')?.metadata).toEqual({ action: 'write_file', file: 'src/greet.ts' });
    expect(r.tokens).toEqual({ input: 1400, output: 100 });
    expect(r.sessionId).toBe('abc123');
  });

  test('opencode json: tool, text, step tokens and cost', () => {
    const r = run('opencode-json', 'opencode-json.jsonl');
    expect(r.entries.find((e) => e.source === 'tool')?.metadata).toEqual({ action: 'write', file: '/tmp/wt/src/greet.ts' });
    expect(r.tokens).toEqual({ input: 2000, output: 60 });
    expect(r.cost).toBe(0.0042);
    expect(r.summary).toBe('Created src/greet.ts.');
  });

  test('every field of every sample event replaced by a value of another type (null, number, string, array, object, 1e308, -1): no throw, messages are text, tokens whole counts, cost finite', () => {
    const hostile: unknown[] = [null, 5, -1, 1.5, 1e308, 'x', '12', true, [], [1, 'a', null], {}, { a: { b: 1 } }];
    // every path of a JSON value (objects' keys and arrays' indexes, at every depth)
    const paths = (v: unknown, at: (string | number)[] = []): (string | number)[][] =>
      v && typeof v === 'object' ? Object.entries(v).flatMap(([k, c]) => [[...at, Array.isArray(v) ? Number(k) : k], ...paths(c, [...at, Array.isArray(v) ? Number(k) : k])]) : [];
    const replaced = (v: unknown, path: (string | number)[], value: unknown): unknown => {
      const copy = structuredClone(v) as Record<string | number, unknown>;
      let o = copy;
      for (const k of path.slice(0, -1)) o = o[k] as Record<string | number, unknown>;
      o[path.at(-1) as string | number] = value;
      return copy;
    };
    let cases = 0;
    for (const [format, file] of [
      ['claude-stream-json', 'claude-stream-json.jsonl'],
      ['codex-json', 'codex-json.jsonl'],
      ['gemini-stream-json', 'gemini-stream-json.jsonl'],
      ['opencode-json', 'opencode-json.jsonl'],
    ] as const) {
      for (const line of fixture(file)) {
        const event = JSON.parse(line);
        for (const path of paths(event)) {
          for (const value of hostile) {
            // a parser keeps totals across lines: a fresh one per case, fed a real event first
            const p = createParser(format);
            p.line('stdout', fixture(file)[0] as string);
            const out = p.line('stdout', JSON.stringify(replaced(event, path, value)));
            cases++;
            for (const e of out.entries) expect(typeof e.message).toBe('string');
            if (out.tokens) for (const n of [out.tokens.input, out.tokens.output]) expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
            if (out.cost !== undefined) expect(Number.isFinite(out.cost) && out.cost >= 0).toBe(true);
            if (out.summary !== undefined) expect(typeof out.summary).toBe('string');
            if (out.progress?.current !== undefined) expect(typeof out.progress.current).toBe('string');
          }
        }
        // the event itself as another type, and with its type only
        for (const value of hostile) createParser(format).line('stdout', JSON.stringify(value));
        for (const k of Object.keys(event)) if (k !== 'type') expect(() => createParser(format).line('stdout', JSON.stringify({ type: event.type, [k]: null }))).not.toThrow();
      }
    }
    expect(cases).toBeGreaterThan(1000);
  });

  test('JSON formats keep non-JSON lines as text entries', () => {
    const p = createParser('claude-stream-json');
    expect(p.line('stdout', 'plain output').entries[0]).toMatchObject({ level: 'info', message: 'plain output' });
  });
});

describe('agent profiles', () => {
  test('built-ins and config file agents; unknown names resolve to nothing', () => {
    const config = testConfigFrom({ agents: { mine: { command: ['my-agent', '--json'], format: 'codex-json', resumeArgs: ['--resume'], model: 'm1' } } });
    expect(resolveAgentProfile(config, 'claude-code')).toMatchObject({ command: ['claude', '-p', '--output-format=stream-json', '--verbose'], format: 'claude-stream-json' });
    expect(resolveAgentProfile(config, 'claude')?.command[0]).toBe('claude');
    expect(resolveAgentProfile(config, 'codex')).toMatchObject({ command: ['codex', 'exec', '--json'], resumeCommand: ['codex', 'exec', '--json', 'resume', '--last'] });
    for (const n of ['gemini', 'cursor', 'opencode', 'amp']) expect(resolveAgentProfile(config, n)).toBeDefined();
    expect(resolveAgentProfile(config, 'mine')).toMatchObject({ command: ['my-agent', '--json'], resumeCommand: ['my-agent', '--json', '--resume'], format: 'codex-json', model: 'm1' });
    expect(resolveAgentProfile(config, 'nope')).toBeUndefined();
    expect(knownAgentNames(config)).toEqual(expect.arrayContaining(['mine', 'codex', 'claude-code']));
  });
});

describe('diff parsing', () => {
  const text = [
    'diff --git a/README.md b/README.md',
    'index 1111111..2222222 100644',
    '--- a/README.md',
    '+++ b/README.md',
    '@@ -1,2 +1,2 @@',
    ' line 1',
    '-line 2',
    '+line two',
    'diff --git a/new.txt b/new.txt',
    'new file mode 100644',
    '--- /dev/null',
    '+++ b/new.txt',
    '@@ -0,0 +1,2 @@',
    '+a',
    '+b',
    '',
  ].join('\n');
  test('files, statuses, counts and line numbers; split rows pair deletions with additions', () => {
    const d = parseUnifiedDiff(text);
    expect(d.summary).toEqual({ filesChanged: 2, additions: 3, deletions: 1 });
    expect(d.files.map((f) => [f.path, f.status, f.additions, f.deletions])).toEqual([
      ['README.md', 'modified', 1, 1],
      ['new.txt', 'added', 2, 0],
    ]);
    expect(d.files[1]?.changes).toEqual([
      { type: 'add', lineNumber: 1, content: 'a' },
      { type: 'add', lineNumber: 2, content: 'b' },
    ]);
    expect(splitRows(d.files[0] as never)).toEqual([
      { left: { lineNumber: 1, content: 'line 1', type: 'context' }, right: { lineNumber: 1, content: 'line 1', type: 'context' } },
      { left: { lineNumber: 2, content: 'line 2', type: 'delete' }, right: { lineNumber: 2, content: 'line two', type: 'add' } },
    ]);
  });

  test('file paths outside the worktree are refused', () => {
    expect(safeRelativePath('/w', 'src/a.ts')).toBe('src/a.ts');
    for (const bad of ['../x', '/etc/passwd', 'a/../../x', '.git/config', '.']) expect(safeRelativePath('/w', bad)).toBeNull();
  });
});
