/**
 * An attempt's duration, counting while it runs. The API gives a running attempt's duration as of its answer (start
 * to the moment it was read), and nothing reads it again until an event comes: a run of minutes showed "0.7 s"
 * throughout. While `running`, the shown value goes on from the one read, once a second, counted from when it was
 * read here (the browser's clock only measures the time since, so a clock set differently from the server's does not
 * matter). A display clock: it sends no request.
 */
import { useEffect, useMemo, useState } from 'react';
import { formatDuration } from './taskTypes';

export function Elapsed({ seconds, running }: { seconds: number | null; running: boolean }) {
  // the value read and when it came: a new read (another value) starts the count again from it
  const read = useMemo(() => ({ seconds, at: Date.now() }), [seconds]);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [running]);
  if (!running || read.seconds === null) return <>{formatDuration(seconds)}</>;
  const shown = read.seconds + Math.max(0, now - read.at) / 1000;
  // whole seconds while it counts (a tenth that changes once a second reads as noise)
  return <>{shown < 60 ? `${Math.floor(shown)} s` : formatDuration(shown)}</>;
}
