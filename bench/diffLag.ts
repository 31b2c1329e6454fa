/**
 * Event-loop lag of the task service while it builds a live diff event (parse, serialise, hash: diffEvent.ts) of a
 * large diff: inline on the main thread vs on the warm piscina pool (lib/attempts/cpuPool.ts). The lag is what every
 * other request and stream of that API process waits. Run: `npx tsx bench/diffLag.ts [--mb 5] [--rounds 5]`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createCpuPool } from '../lib/attempts/cpuPool';

const { values: flags } = parseArgs({ options: { mb: { type: 'string', default: '5' }, rounds: { type: 'string', default: '5' } } });
const MB = Number(flags.mb);
const ROUNDS = Number(flags.rounds);

/** A unified diff of about `mb` MB: files of 1,000 added lines of ~60 characters. */
function bigDiff(mb: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let f = 0; size < mb * 1024 * 1024; f++) {
    const lines = Array.from({ length: 1000 }, (_, i) => `+const value${i} = compute(${i}, "some text of a changed line in file ${f}");`);
    const file = [`diff --git a/src/f${f}.ts b/src/f${f}.ts`, 'new file mode 100644', '--- /dev/null', `+++ b/src/f${f}.ts`, '@@ -0,0 +1,1000 @@', ...lines].join('\n');
    parts.push(file);
    size += file.length + 1;
  }
  return parts.join('\n');
}

async function measure(mode: 'inline' | 'pool', text: string) {
  const pool = createCpuPool({ inlineLimit: mode === 'inline' ? Number.POSITIVE_INFINITY : undefined });
  await pool.ready();
  await pool.diffEvent(text); // warm-up (JIT, and the pool's code)
  const lag = monitorEventLoopDelay({ resolution: 1 });
  // a heartbeat every 5 ms, as a stream's writes would be: its longest gap is the worst stall
  let last = performance.now();
  let worstGap = 0;
  const beat = setInterval(() => {
    const now = performance.now();
    worstGap = Math.max(worstGap, now - last);
    last = now;
  }, 5);
  lag.enable();
  let hash = '';
  let busy = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const r0 = performance.now();
    hash = (await pool.diffEvent(text)).hash;
    busy += performance.now() - r0;
    await new Promise((r) => setTimeout(r, 50)); // let the timers run (inline, they could not until now)
  }
  const perRound = busy / ROUNDS;
  lag.disable();
  clearInterval(beat);
  await pool.close();
  const ms = (ns: number) => Number((ns / 1e6).toFixed(1));
  return { mode, msPerDiffEvent: Number(perRound.toFixed(0)), lagMs: { p50: ms(lag.percentile(50)), p99: ms(lag.percentile(99)), max: ms(lag.max) }, worstHeartbeatGapMs: Number(worstGap.toFixed(0)), hash };
}

async function main() {
  const text = bigDiff(MB);
  const inline = await measure('inline', text);
  const pooled = await measure('pool', text);
  if (inline.hash !== pooled.hash) throw new Error('the pool and inline disagree');
  process.stdout.write(`${JSON.stringify({ diffBytes: text.length, rounds: ROUNDS, inline, pool: pooled }, null, 2)}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
