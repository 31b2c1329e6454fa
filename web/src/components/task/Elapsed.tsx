/**
 * An attempt's duration, counting while it runs. The API gives a running attempt's duration as of its answer (start
 * to the moment it was read), and nothing reads it again until an event comes: a run of minutes showed "0.7 s"
 * throughout. While `running`, the shown value goes on from the one read, counted from when it was read here (the
 * browser's clock only measures the time since, so a clock set differently from the server's does not matter). A
 * display clock: it sends no request.
 *
 * One clock per attempt: the Task screen shows a running attempt's duration twice (the attempts table, from the task's
 * read, and under the attempt's title, from the attempt's own read). Each used to count from its own read on its own
 * 1 s timer, and the two differed by about a second. Now every display of an attempt counts from the same start (the
 * latest read of it, whichever query brought it) and all of them move on one shared tick.
 */
import { useEffect, useMemo, useSyncExternalStore } from 'react';
import { formatDuration } from './taskTypes';

/** Per attempt, when it started on the browser's clock (ms), from its latest read. */
const starts = new Map<string, { start: number; seconds: number }>();
const listeners = new Set<() => void>();
/** The shared clock's time: all displays render the same instant (each reading Date.now() could straddle a second). */
let now = Date.now();
let timer: ReturnType<typeof setInterval> | null = null;

function notify() {
  now = Date.now();
  for (const l of listeners) l();
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  timer ??= setInterval(notify, 1000);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
}

const noSubscribe = () => () => {};

export function Elapsed({ id, seconds, running }: { id: string; seconds: number | null; running: boolean }) {
  // a new read (another value) moves the attempt's start; the displays that show it all follow
  const read = useMemo(() => ({ seconds, at: Date.now() }), [seconds]);
  useEffect(() => {
    if (!running || read.seconds === null) return;
    const known = starts.get(id);
    // the latest read wins: a read made earlier but delivered later (the same seconds or fewer) does not move it back
    if (known && known.seconds >= read.seconds) return;
    starts.set(id, { start: read.at - read.seconds * 1000, seconds: read.seconds });
    notify();
  }, [id, read, running]);
  const tick = useSyncExternalStore(running ? subscribe : noSubscribe, () => now);
  if (!running || read.seconds === null) return <>{formatDuration(seconds)}</>;
  const start = starts.get(id)?.start ?? read.at - read.seconds * 1000;
  // before the first tick after this read, the clock may be older than the read itself
  const shown = Math.max(0, Math.max(tick, read.at) - start) / 1000;
  // whole seconds while it counts (a tenth that changes once a second reads as noise)
  return <>{shown < 60 ? `${Math.floor(shown)} s` : formatDuration(shown)}</>;
}
