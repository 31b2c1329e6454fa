/**
 * Durations, the same on every screen (docs/ui.md): "0.1 s", "12.4 s", "3 min 5 s", "2 h 4 min"; a duration above
 * zero that would show as "0.0 s" says "< 0.1 s". The Scheduler wrote its executions' as the scheduler API gives them
 * ("83ms", "1m 05s") beside the task screen's "0.1 s".
 */
export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds > 0 && seconds < 0.05) return '< 0.1 s';
  if (seconds < 59.95) return `${seconds.toFixed(1)} s`;
  const total = Math.round(seconds);
  const m = Math.floor(total / 60);
  if (m < 60) return `${m} min ${total % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * The seconds of a duration as the scheduler API writes it (lib/scheduler/settings.ts `humanDuration`: "83ms",
 * "1.2s", "1m 05s", "2h 04m"), or null for anything else.
 */
export function parseSchedulerDuration(text: string | null): number | null {
  if (!text) return null;
  let m = /^(\d+)ms$/.exec(text);
  if (m) return Number(m[1]) / 1000;
  m = /^(\d+(?:\.\d+)?)s$/.exec(text);
  if (m) return Number(m[1]);
  m = /^(\d+)m (\d+)s$/.exec(text);
  if (m) return Number(m[1]) * 60 + Number(m[2]);
  m = /^(\d+)h (\d+)m$/.exec(text);
  if (m) return Number(m[1]) * 3600 + Number(m[2]) * 60;
  return null;
}
