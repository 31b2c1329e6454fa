/**
 * The live log of one process. What is stored comes first as one HTTP answer (`GET /api/processes/:id/logs`, NDJSON),
 * then the WebSocket `/ws/execution-processes/:id/logs/normalized` goes on after its last line, live, resumed after a
 * reconnect from the last `seq` seen (`?after=`; entries at or below it are dropped anyway). Over the WebSocket alone a
 * 100k-line log took 12 s to show (the browser handles each message on its own); the answer takes about 1 s. When the
 * server resets that cursor (its log is another history: a backup restored), the lines held are dropped and the log
 * is read again from the start. Rows are virtualised (@tanstack/react-virtual, a line's height each; measured, as a
 * long line wraps in the box) over an append-only buffer, so 100k lines scroll smoothly. The view follows the tail
 * until the user scrolls up; "Jump to latest" follows again. Search highlights matches and steps through them (Enter /
 * Shift+Enter); the level and source filters hide entries.
 *
 * Screen readers: the log is `role="log"` with `aria-live="off"`. A log is a polite live region by default, and the
 * rows the virtualiser adds and drops (a line every 250 ms from a ticking agent, whole screens of them on a scroll)
 * would be read one after another, drowning everything else. Instead a polite status says how many lines came, at most
 * once every ANNOUNCE_EVERY_MS ("12 new log lines, 1 error"), and when the run ended; the lines read when the view
 * opens are not announced.
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { readNdjson, useWebSocketStream } from '../../api';
import { useScrolls } from '../scrollBox';
import { LogBuffer } from './logBuffer';
import type { LogEntry } from './taskTypes';

const ROW_HEIGHT = 20;
/** room above the first line and under the last one inside the box (they touched its edges) */
const LOG_PAD = 6;
/** how often, at most, the polite status says how many lines came */
export const ANNOUNCE_EVERY_MS = 5_000;
const LEVELS = ['debug', 'info', 'warn', 'error'];

function Highlighted({ text, query }: { text: string; query: string }) {
  if (!query) return <>{text}</>;
  const parts: React.ReactNode[] = [];
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  let at = 0;
  let i = lower.indexOf(q);
  while (i >= 0) {
    if (i > at) parts.push(text.slice(at, i));
    parts.push(<mark key={i}>{text.slice(i, i + q.length)}</mark>);
    at = i + q.length;
    i = lower.indexOf(q, at);
  }
  if (at < text.length) parts.push(text.slice(at));
  return <>{parts}</>;
}

const plural = (n: number, one: string) => `${n.toLocaleString()} ${one}${n === 1 ? '' : 's'}`;

/** What the lines counted since the last announcement add up to ('' for none), and starts counting again. */
function takeBatch(pending: { lines: number; errors: number }): string {
  const { lines, errors } = pending;
  pending.lines = 0;
  pending.errors = 0;
  if (!lines) return '';
  return `${plural(lines, 'new log line')}${errors ? `, ${plural(errors, 'error')}` : ''}.`;
}

/**
 * The polite status of a live log: lines counted as they come, said as one sentence at most every ANNOUNCE_EVERY_MS
 * (the first ANNOUNCE_EVERY_MS after the first line of a batch), and the end of the run said at once with what was
 * left to say.
 */
function useLogAnnouncer() {
  const [text, setText] = useState('');
  const pending = useRef({ lines: 0, errors: 0 });
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const line = useCallback((level: string) => {
    pending.current.lines++;
    if (level === 'error') pending.current.errors++;
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      const said = takeBatch(pending.current);
      if (said) setText(said);
    }, ANNOUNCE_EVERY_MS);
  }, []);
  const ended = useCallback((total: number) => {
    clearTimeout(timer.current);
    timer.current = undefined;
    setText(`${takeBatch(pending.current)} The run ended: ${plural(total, 'log line')}.`.trim());
  }, []);
  const forget = useCallback(() => {
    takeBatch(pending.current);
  }, []);
  return { text, line, ended, forget };
}

/**
 * `finished`: the process is known to have ended (its status, read with the attempt's runs). Its log is then as long
 * as it will be, and its box as high as its lines, up to the box's full height (`.log-fit`: a 2-line log sat in a
 * 420 px box, empty below); a live log keeps the full height until its stream ends, so that what is under the box
 * does not move down with each line that comes.
 */
export function LogView({ processId, finished, onEnd }: { processId: string; finished?: boolean; onEnd?: () => void }) {
  // one buffer per process: the parent keys this component by processId
  const [buffer] = useState(() => new LogBuffer());
  const [, setVersion] = useState(0);
  const [ended, setEnded] = useState(false);
  const frame = useRef(0);
  const scheduleRender = useCallback(() => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      setVersion(buffer.version);
    });
  }, [buffer]);
  useEffect(() => () => cancelAnimationFrame(frame.current), []);

  // the stored lines, read over HTTP; then the socket from the last of them (from the start if the read failed: the
  // socket replays what is missing)
  const [history, setHistory] = useState<{ lastSeq: number } | null>(null);
  const announcer = useLogAnnouncer();
  useEffect(() => {
    const ac = new AbortController();
    readNdjson<LogEntry>(
      `/processes/${encodeURIComponent(processId)}/logs`,
      (lines) => {
        for (const l of lines) buffer.push(l);
        scheduleRender();
      },
      ac.signal,
    ).then(
      () => setHistory({ lastSeq: buffer.lastSeq }),
      () => {
        if (!ac.signal.aborted) setHistory({ lastSeq: buffer.lastSeq });
      },
    );
    return () => ac.abort();
  }, [buffer, processId, scheduleRender]);

  useWebSocketStream<LogEntry | { type: 'error'; message: string }>(history ? `/ws/execution-processes/${processId}/logs/normalized` : null, {
    initialSeq: history?.lastSeq,
    endOnNormalClose: true,
    seqOf: (m) => ('seq' in m ? m.seq : undefined),
    resumeQuery: (seq) => ({ after: String(seq) }),
    resetFrom: 'start',
    onReset: () => {
      buffer.clear();
      announcer.forget();
      scheduleRender();
    },
    onMessage: (m) => {
      if (!('seq' in m)) return;
      const before = buffer.lastSeq;
      buffer.push(m);
      if (buffer.lastSeq !== before) announcer.line(m.level);
      scheduleRender();
    },
    onEnd: () => {
      setEnded(true);
      announcer.ended(buffer.entries.length);
      onEnd?.();
    },
  });

  // filters
  const [hiddenLevels, setHiddenLevels] = useState<Set<string>>(new Set());
  const [hiddenSources, setHiddenSources] = useState<Set<string>>(new Set());
  const [sourcesRef, sourcesScroll] = useScrolls<HTMLFieldSetElement>();
  useEffect(() => {
    buffer.setFilter({ hiddenLevels, hiddenSources });
    scheduleRender();
  }, [buffer, hiddenLevels, hiddenSources, scheduleRender]);
  const toggle = (set: Set<string>, value: string) => {
    const next = new Set(set);
    if (next.has(value)) next.delete(value);
    else next.add(value);
    return next;
  };

  // search: matches are positions in buffer.visible, extended as lines arrive
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState(-1);
  const matchState = useRef<{ query: string; visible: number[]; scanned: number; matches: number[] }>({ query: '', visible: [], scanned: 0, matches: [] });
  const ms = matchState.current;
  if (ms.query !== query || ms.visible !== buffer.visible) {
    matchState.current = { query, visible: buffer.visible, scanned: 0, matches: [] };
  }
  const st = matchState.current;
  if (st.scanned < buffer.visible.length) {
    st.matches.push(...buffer.search(query, st.scanned));
    st.scanned = buffer.visible.length;
  }
  const matches = st.matches;

  // virtual rows and tail following
  const scrollRef = useRef<HTMLDivElement>(null);
  const [following, setFollowing] = useState(true);
  const count = buffer.visible.length;
  // a row is one line high (ROW_HEIGHT), unless its line is longer than the box and wraps (task.css, `.log-line`):
  // rows are measured as they are shown (`measureElement`), so a wrapped one takes its height
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 30,
    paddingStart: LOG_PAD,
    paddingEnd: LOG_PAD,
  });
  const totalSize = count ? virtualizer.getTotalSize() : 0;
  // following: after each render with new rows, or rows measured taller (wrapped), scroll to the bottom
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (following && el && count > 0 && totalSize > 0) el.scrollTop = el.scrollHeight;
  }, [following, count, totalSize]);
  // only the user scrolling up stops following: a scroll event of our own tail scroll may arrive after more rows
  // were added (not at the bottom any more, yet not scrolled up)
  const lastTop = useRef(0);
  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - ROW_HEIGHT;
    const up = el.scrollTop < lastTop.current - 1;
    lastTop.current = el.scrollTop;
    if (atBottom && !following) setFollowing(true);
    else if (up && !atBottom && following) setFollowing(false);
  };

  const goToMatch = (i: number) => {
    if (!matches.length) return;
    const n = ((i % matches.length) + matches.length) % matches.length;
    setCurrent(n);
    // a box with nothing to scroll (a short ended log) keeps following: "Jump to latest" had nothing to jump to, and
    // covered the last lines
    const el = scrollRef.current;
    if (el && el.scrollHeight > el.clientHeight) setFollowing(false);
    virtualizer.scrollToIndex(matches[n] as number, { align: 'center' });
  };
  const currentRow = current >= 0 && current < matches.length ? matches[current] : -1;

  return (
    <div className="log-view">
      <div className="log-toolbar">
        {/* the field, the count and the two arrows as one group, the field narrowing to keep them on its row: in a
            phone's window the arrows wrapped onto a row of their own under the field */}
        <span className="log-search">
          <label className="inline-field">
            <span>Search log</span>
            <input
              type="search"
              value={query}
              onChange={(e) => {
                setQuery(e.target.value);
                setCurrent(-1);
              }}
              onKeyDown={(e) => {
                if (e.key === 'Enter') {
                  e.preventDefault();
                  goToMatch(e.shiftKey ? current - 1 : current + 1);
                }
              }}
            />
          </label>
          {/* the count and the two arrows wrap as one: in a phone's window ↓ went onto the next row, away from ↑ */}
          <span className="log-nav">
            <span className="muted" aria-live="polite">
              {query ? `${matches.length ? current + 1 : 0} of ${matches.length}` : ''}
            </span>
            <button type="button" onClick={() => goToMatch(current - 1)} disabled={!matches.length} aria-label="Previous match">
              ↑
            </button>
            <button type="button" onClick={() => goToMatch(current + 1)} disabled={!matches.length} aria-label="Next match">
              ↓
            </button>
          </span>
        </span>
        <fieldset className="log-filter">
          <legend>Levels</legend>
          {LEVELS.map((l) => (
            <label key={l}>
              <input type="checkbox" checked={!hiddenLevels.has(l)} onChange={() => setHiddenLevels(toggle(hiddenLevels, l))} /> {l}
            </label>
          ))}
        </fieldset>
        <span className="muted log-count">
          {count.toLocaleString()} of {buffer.entries.length.toLocaleString()} lines{ended ? ' · ended' : ' · live'}
        </span>
        {/* a row of its own, always there and one line high: it appeared when a second source came mid-run, and
            pushed the log box down under the reader's eyes */}
        {/* more sources than fit scroll sideways: then the row takes Tab, so the keyboard can scroll it (useScrolls) */}
        <fieldset className="log-filter log-sources" ref={sourcesRef} tabIndex={sourcesScroll ? 0 : undefined}>
          <legend>Sources</legend>
          {buffer.sources.size > 1 ? (
            [...buffer.sources].sort().map((s) => (
              <label key={s}>
                <input type="checkbox" checked={!hiddenSources.has(s)} onChange={() => setHiddenSources(toggle(hiddenSources, s))} /> {s}
              </label>
            ))
          ) : (
            <span className="muted">{buffer.sources.size === 1 ? `${[...buffer.sources][0]} only${ended ? '' : ', so far'}` : 'none yet'}</span>
          )}
        </fieldset>
      </div>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard to scroll it */}
      <div className={ended || finished ? 'log-scroll log-fit' : 'log-scroll'} ref={scrollRef} onScroll={onScroll} role="log" aria-live="off" aria-label="Attempt log" tabIndex={0}>
        <div style={{ height: totalSize, position: 'relative' }}>
          {virtualizer.getVirtualItems().map((row) => {
            const e = buffer.entries[buffer.visible[row.index] as number] as LogEntry;
            return (
              <div
                key={row.key}
                ref={virtualizer.measureElement}
                data-index={row.index}
                className={`log-line log-${e.level}${row.index === currentRow ? ' log-current' : ''}`}
                style={{ transform: `translateY(${row.start}px)` }}
              >
                <span className="log-time">{e.timestamp.slice(11, 23)}</span>
                <span className="log-level">{e.level}</span>
                <span className="log-msg">
                  <Highlighted text={e.message} query={query} />
                </span>
              </div>
            );
          })}
        </div>
        {count === 0 ? <p className="muted log-empty">{ended ? 'No log lines.' : 'Waiting for log lines…'}</p> : null}
      </div>
      <p className="visually-hidden" role="status" aria-label="Log updates">
        {announcer.text}
      </p>
      {!following && count > 0 ? (
        <button type="button" className="primary log-jump" onClick={() => setFollowing(true)}>
          Jump to latest
        </button>
      ) : null}
    </div>
  );
}
