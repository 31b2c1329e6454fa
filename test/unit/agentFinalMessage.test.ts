/** Final-message extraction per agent format, on the sample outputs (test/fixtures/agent-output) and edge cases. */
import fs from 'node:fs';
import path from 'node:path';
import { createFinalMessage, lastBytes } from '../../activities/agent/parsers';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'agent-output', name), 'utf8').split('\n').filter(Boolean);
const json = (objs: object[]) => objs.map((o) => JSON.stringify(o));

function final(format: string, lines: string[], maxBytes = 64 * 1024): string | undefined {
  const f = createFinalMessage(format, maxBytes);
  for (const l of lines) f.line(l);
  return f.text();
}

const claudeAssistant = (content: unknown, parent: string | null = null) => ({
  type: 'assistant',
  message: { role: 'assistant', content },
  parent_tool_use_id: parent,
});

describe('final message of each format, on the sample outputs', () => {
  test.each([
    ['claude-stream-json', 'claude-stream-json.jsonl', 'Added greet() in src/greet.ts; tests pass.'],
    ['stream-json', 'claude-stream-json.jsonl', 'Added greet() in src/greet.ts; tests pass.'],
    ['codex-json', 'codex-json.jsonl', 'Added src/greet.ts and documented it in README.md.'],
    ['gemini-stream-json', 'gemini-stream-json.jsonl', 'Done: src/greet.ts exists.'],
    ['opencode-json', 'opencode-json.jsonl', 'Created src/greet.ts.'],
  ])('%s', (format, file, expected) => {
    expect(final(format, fixture(file))).toBe(expected);
  });

  test('text and unknown formats have none (the caller keeps stdout), even for JSON output', () => {
    expect(final('text', fixture('text.txt'))).toBeUndefined();
    expect(final('text', fixture('claude-stream-json.jsonl'))).toBeUndefined();
    expect(final('no-such-format', fixture('claude-stream-json.jsonl'))).toBeUndefined();
  });
});

describe('claude stream-json', () => {
  test('without a result event: the last assistant text of the main agent (subagent text and tool uses skipped)', () => {
    const lines = fixture('claude-stream-json.jsonl').filter((l) => !l.includes('"type":"result"'));
    expect(final('claude-stream-json', lines)).toBe("I'll add the greeting function.");
    const more = json([
      claudeAssistant([{ type: 'text', text: 'First part.' }, { type: 'tool_use', name: 'Bash', input: {} }, { type: 'text', text: 'Second part.' }]),
      claudeAssistant([{ type: 'text', text: 'a subagent speaking' }], 'toolu_9'),
      claudeAssistant([{ type: 'tool_use', name: 'Read', input: {} }]),
      claudeAssistant([{ type: 'text', text: '   ' }]),
    ]);
    expect(final('claude-stream-json', [...lines, ...more])).toBe('First part.\nSecond part.');
    expect(final('claude-stream-json', json([claudeAssistant('string content')]))).toBe('string content');
  });

  test('an empty result falls back to the last assistant text; an error result is the final text', () => {
    const said = json([claudeAssistant([{ type: 'text', text: 'Said before.' }])]);
    expect(final('claude-stream-json', [...said, ...json([{ type: 'result', subtype: 'success', result: '' }])])).toBe('Said before.');
    expect(final('claude-stream-json', [...said, ...json([{ type: 'result', subtype: 'error_max_turns', is_error: true }])])).toBe('Said before.');
    const failed = json([{ type: 'result', is_error: true, result: 'API Error: overloaded' }]);
    expect(final('claude-stream-json', [...said, ...failed])).toBe('API Error: overloaded');
  });

  test('garbage lines are ignored around the events', () => {
    const garbage = ['', 'Starting claude…', '{not json', '[1,2]', 'null', '{"type":"result","result":42}'];
    const lines = [...garbage, ...fixture('claude-stream-json.jsonl'), '}{', '{"type":"mystery"}'];
    expect(final('claude-stream-json', lines)).toBe('Added greet() in src/greet.ts; tests pass.');
  });
});

describe('codex, gemini, opencode', () => {
  test('codex: the last agent_message; a failed turn without one has none', () => {
    const msg = (text: string) => ({ type: 'item.completed', item: { type: 'agent_message', text } });
    const more = json([msg('One more thing.'), { type: 'item.completed', item: { type: 'reasoning', text: 'hmm' } }]);
    expect(final('codex-json', [...fixture('codex-json.jsonl'), ...more])).toBe('One more thing.');
    expect(final('codex-json', json([{ type: 'thread.started', thread_id: 't' }, { type: 'turn.failed', error: { message: 'quota' } }]))).toBeUndefined();
  });

  test('gemini: deltas of one message are joined; a tool use starts a new message; a full message replaces', () => {
    const delta = (content: string) => ({ type: 'message', role: 'assistant', content, delta: true });
    expect(final('gemini-stream-json', json([delta('Hello '), delta('world.\n'), delta('Second line.')]))).toBe('Hello world.\nSecond line.');
    expect(final('gemini-stream-json', json([delta('before'), { type: 'tool_use', tool_name: 'ls' }, delta('after '), delta('tools')]))).toBe('after tools');
    expect(final('gemini-stream-json', json([delta('partial'), { type: 'message', role: 'assistant', content: 'Whole answer.' }]))).toBe('Whole answer.');
    expect(final('gemini-stream-json', json([delta('answer'), { type: 'message', role: 'user', content: 'next prompt' }, delta('new')]))).toBe('new');
    expect(final('gemini-stream-json', json([{ type: 'init', session_id: 's' }, { type: 'result', status: 'error' }]))).toBeUndefined();
  });

  test('opencode: the last text part', () => {
    const text = (t: string) => ({ type: 'text', part: { type: 'text', text: t } });
    expect(final('opencode-json', json([text('Step one done.'), { type: 'step_finish', part: {} }, text('All done.')]))).toBe('All done.');
  });
});

describe('edge cases', () => {
  test.each(['claude-stream-json', 'codex-json', 'gemini-stream-json', 'opencode-json'])('%s: empty or non-JSON output has no final message', (format) => {
    expect(final(format, [])).toBeUndefined();
    expect(final(format, ['plain text only', 'more text'])).toBeUndefined();
  });

  test('surrounding whitespace is trimmed; a whitespace-only answer is none', () => {
    expect(final('opencode-json', json([{ type: 'text', part: { text: '\n  The answer.\n\n' } }]))).toBe('The answer.');
    expect(final('opencode-json', json([{ type: 'text', part: { text: ' \n ' } }]))).toBeUndefined();
  });

  test('bounded: a long answer keeps its last maxBytes bytes, whole characters only, also when built from many deltas', () => {
    const long = `${'é'.repeat(100)}END`;
    const cut = final('claude-stream-json', json([{ type: 'result', result: long }]), 50) as string;
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(50);
    expect(cut).toBe(`${'é'.repeat(23)}END`); // 23 × 2 + 3 = 49 bytes: the half of a 24th "é" is dropped

    const deltas = Array.from({ length: 5000 }, (_, i) => ({ type: 'message', role: 'assistant', content: `chunk ${i};`, delta: true }));
    const joined = final('gemini-stream-json', json(deltas), 1000) as string;
    expect(Buffer.byteLength(joined)).toBeLessThanOrEqual(1000);
    expect(Buffer.byteLength(joined)).toBeGreaterThan(990);
    expect(joined.endsWith('chunk 4998;chunk 4999;')).toBe(true);
  });

  test('lastBytes keeps short text as it is', () => {
    expect(lastBytes('short', 10)).toBe('short');
    expect(lastBytes('abcdef', 3)).toBe('def');
  });
});
