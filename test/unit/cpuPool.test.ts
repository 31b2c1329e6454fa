/** The piscina pool: large diffs and bulk log normalisation run on worker threads with the same results as inline. */
import { createCpuPool } from '../../lib/attempts/cpuPool';
import { diffEventBody } from '../../lib/attempts/diffEvent';
import { parseUnifiedDiff } from '../../lib/attempts/diffParse';

const bigDiff = (files: number, lines: number) =>
  Array.from({ length: files }, (_, f) =>
    [`diff --git a/f${f}.txt b/f${f}.txt`, 'new file mode 100644', '--- /dev/null', `+++ b/f${f}.txt`, `@@ -0,0 +1,${lines} @@`, ...Array.from({ length: lines }, (_, i) => `+line ${i}`)].join('\n'),
  ).join('\n');

test('a diff over the inline limit is parsed on a pool thread; the event loop keeps ticking', async () => {
  const pool = createCpuPool({ maxThreads: 1 });
  try {
    const text = bigDiff(200, 1000); // ~2.5 MB
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const parsed = await pool.parseDiff(text);
    clearInterval(timer);
    expect(pool.offloaded()).toBe(1);
    expect(parsed.summary).toEqual({ filesChanged: 200, additions: 200_000, deletions: 0 });
    expect(parsed).toEqual(parseUnifiedDiff(text));
    expect(ticks).toBeGreaterThan(0);
    const small = await pool.parseDiff(bigDiff(1, 3));
    expect(small.summary.additions).toBe(3);
    expect(pool.offloaded()).toBe(1); // small inputs stay inline
    const entries = await pool.normalizeLogs('codex-json', [
      { stream: 'stdout', line: '{"type":"item.completed","item":{"type":"agent_message","text":"hi"}}' },
      { stream: 'stderr', line: 'Error: x' },
    ]);
    expect(entries.map((e) => [e.level, e.message, e.source])).toEqual([
      ['info', 'hi', 'assistant'],
      ['error', 'Error: x', 'stderr'],
    ]);
  } finally {
    await pool.close();
  }
});

test('a live diff event of a large diff is built on the warm pool, equal to the inline one', async () => {
  const pool = createCpuPool({ maxThreads: 1 });
  try {
    await pool.ready();
    const text = bigDiff(100, 1000);
    const onPool = await pool.diffEvent(text);
    expect(pool.offloaded()).toBe(1);
    const inline = diffEventBody(text);
    expect(onPool).toEqual(inline);
    expect(onPool.summary).toEqual({ filesChanged: 100, additions: 100_000, deletions: 0 });
    expect(JSON.parse(onPool.filesJson)[0].changes[0]).toEqual({ type: 'add', lineNumber: 1, content: 'line 0' });
    expect(onPool.hash).toMatch(/^[0-9a-f]{16}$/);
  } finally {
    await pool.close();
  }
});
