#!/usr/bin/env node
'use strict';
// A chatty agent for bench/logs.ts: prints CHATTY_RATE lines per second for CHATTY_SECONDS seconds, each
// `chatty <n> <epoch ms when written>`, then exits 0. Lines are paced by elapsed time, not by timer ticks, so the
// count is exact (rate × seconds) however late the timers fire on a busy machine.
const rate = Number(process.env.CHATTY_RATE || 200);
const seconds = Number(process.env.CHATTY_SECONDS || 30);
const total = rate * seconds;
process.stdin.resume();
process.stdin.on('data', () => undefined);
const t0 = Date.now();
let n = 0;
const tick = () => {
  const due = Math.min(total, Math.floor(((Date.now() - t0) / 1000) * rate));
  while (n < due) {
    n++;
    process.stdout.write(`chatty ${n} ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`);
  }
  if (n >= total) {
    clearInterval(timer);
    process.stdout.write('', () => process.exit(0));
  }
};
const timer = setInterval(tick, 5);
