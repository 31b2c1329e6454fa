/**
 * Message traces: the analytics of the last N days as a chart of messages per day by status (stacked), the split by
 * status over the period, and the
 * trace list with instance / phone / status filters (kept in the URL). The trace service has no event stream:
 * refetched when the window gets focus (docs/ui.md). The chart is a small SVG, no library.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useLayoutEffect, useRef, useState } from 'react';
import { useSearchParams } from 'react-router';
import { TRACE_STATUSES, type TraceAnalytics, type TraceStatus, useTraceAnalytics, useTraces } from '../api/agentsTraces';
import { useErrorKept } from '../api';
import { ListTable, Name, NotLoaded, RowFacts, ScreenErrors, useDocumentTitle } from '../components';

const STATUS_COLOR: Record<TraceStatus, string> = { sent: '#3b82f6', delivered: '#22c55e', read: '#8b5cf6', failed: '#ef4444' };

/** What an empty period's analytics say: the reserved chart's content while the real one loads. */
const NO_ANALYTICS: TraceAnalytics = {
  period: { start: '', end: '' },
  totalMessages: 0,
  byStatus: { sent: 0, delivered: 0, read: 0, failed: 0 },
  byInstance: {},
  byDay: [],
};

/** The narrowest drawing of the chart (a narrower figure shrinks it); the width it is drawn at before it is measured. */
const MIN_WIDTH = 240;
const FIRST_WIDTH = 720;
/** The widest bar: at 70 % of its day's slot, 7 days in a 1,320 px card would be 127 px slabs. */
const MAX_BAR = 56;
/** The room a day's date label ("11-24", 11 px) needs, and the least for the count above a bar. */
const LABEL_ROOM = 38;
const COUNT_ROOM = 22;

/**
 * The width to draw the chart at: its figure's, in CSS pixels (at least MIN_WIDTH), so that the chart fills its card
 * at any width and its 11 px text stays 11 px. Drawn at 720 and shrunk into a phone's 350 px, its labels were 5 px;
 * drawn at 720 and capped at 900 px, it filled two thirds of a 1,360 px card (its figure's default 40 px margins
 * took more). Measured before the first paint and again on every resize of the figure (the window's, the layout's),
 * so the chart does not change height under the eye.
 */
function useDrawingWidth(ref: React.RefObject<HTMLElement | null>): number {
  const [width, setWidth] = useState(FIRST_WIDTH);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(MIN_WIDTH, Math.floor(el.clientWidth) || FIRST_WIDTH));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}

/**
 * Stacked bars of messages per day (UTC) by status over the period; a day without messages is an empty slot. With
 * `reserve`, an empty chart that only keeps the room of the one on its way (hidden; no test id). A day's date is
 * written under every k-th bar when they are too narrow for one each (30 days ran into one unreadable line), the
 * latest day always, and the counts above the bars only when they fit.
 */
export function DailyChart({ a, reserve }: { a: TraceAnalytics; reserve?: boolean }) {
  const figure = useRef<HTMLElement>(null);
  const W = useDrawingWidth(figure);
  const H = 200;
  const pad = { l: 36, r: 18, t: 24, b: 28 }; // r: room for half the last day's date (8 cut "11-30" in a narrow window)
  const max = Math.max(1, ...a.byDay.map((d) => d.count));
  const n = Math.max(1, a.byDay.length);
  const slot = (W - pad.l - pad.r) / n;
  const y = (v: number) => pad.t + (H - pad.t - pad.b) * (1 - v / max);
  const summary = a.byDay.map((d) => `${d.date}: ${d.count}`).join(', ');
  const bar = Math.min(slot * 0.7, MAX_BAR);
  const labelEvery = Math.ceil(LABEL_ROOM / slot);
  return (
    <figure className="chart-figure" ref={figure}>
      <svg className="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Messages per day: ${summary || 'none'}`} data-testid={reserve ? undefined : 'trace-chart'}>
        <line x1={pad.l} x2={W - pad.r} y1={y(0)} y2={y(0)} stroke="#94a3b8" />
        <text x={pad.l - 6} y={y(max) + 4} textAnchor="end" fontSize="11" fill="#64748b">
          {max}
        </text>
        <text x={pad.l - 6} y={y(0) + 4} textAnchor="end" fontSize="11" fill="#64748b">
          0
        </text>
        {a.byDay.map((d, i) => {
          // the bar in the middle of its day's slot
          const x = pad.l + i * slot + (slot - bar) / 2;
          // one stacked bar per day: a segment per status, bottom to top in TRACE_STATUSES order
          let below = 0;
          const segments = TRACE_STATUSES.map((s) => {
            const v = d.byStatus?.[s] ?? 0;
            const seg = { s, v, top: y(below + v), height: y(below) - y(below + v) };
            below += v;
            return seg;
          });
          return (
            <g key={d.date} data-day={d.date} data-count={d.count}>
              <title>{`${d.date}: ${d.count} ${d.count === 1 ? 'message' : 'messages'} (${TRACE_STATUSES.map((s) => `${s} ${d.byStatus?.[s] ?? 0}`).join(', ')})`}</title>
              {segments.map((seg) => (
                <rect key={seg.s} data-status={seg.s} data-value={seg.v} x={x} y={seg.top} width={bar} height={seg.height} fill={STATUS_COLOR[seg.s]} />
              ))}
              {d.count > 0 && slot >= COUNT_ROOM ? (
                <text x={x + bar / 2} y={y(d.count) - 3} textAnchor="middle" fontSize="11" fill="#334155">
                  {d.count}
                </text>
              ) : null}
              {(n - 1 - i) % labelEvery === 0 ? (
                <text x={x + bar / 2} y={H - 10} textAnchor="middle" fontSize="11" fill="#64748b" data-label>
                  {d.date.slice(5)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <StatusBar a={a} />
    </figure>
  );
}

/** One horizontal bar split by status over the whole period: stretched to the card's width, 18 px high at any width. */
function StatusBar({ a }: { a: TraceAnalytics }) {
  const total = Math.max(1, a.totalMessages);
  let x = 0;
  return (
    <div>
      <svg className="chart status-bar" viewBox="0 0 720 18" preserveAspectRatio="none" role="img" aria-label={`By status: ${TRACE_STATUSES.map((s) => `${s} ${a.byStatus[s]}`).join(', ')}`}>
        {TRACE_STATUSES.map((s) => {
          const w = (720 * a.byStatus[s]) / total;
          const r = <rect key={s} x={x} y={0} width={w} height={18} fill={STATUS_COLOR[s]} />;
          x += w;
          return r;
        })}
      </svg>
      <div className="chart-legend">
        {TRACE_STATUSES.map((s) => (
          <span key={s} style={{ '--swatch': STATUS_COLOR[s] } as React.CSSProperties}>
            {s}: {a.byStatus[s]}
          </span>
        ))}
      </div>
    </div>
  );
}

export function TracesPage() {
  useDocumentTitle('Message traces');
  const [params, setParams] = useSearchParams();
  const filters = { instance: params.get('instance') ?? undefined, phone: params.get('phone') ?? undefined, status: params.get('status') ?? undefined };
  const [days, setDays] = useState(7);
  const qc = useQueryClient();
  // their errors stay while they are tried again (every 5 s while the service is down): they blinked away at each try
  const analytics = useErrorKept(useTraceAnalytics(days));
  const traces = useErrorKept(useTraces(filters));
  const [draft, setDraft] = useState({ instance: filters.instance ?? '', phone: filters.phone ?? '' });
  const setFilter = (next: Record<string, string>) => {
    const p = new URLSearchParams(params);
    for (const [k, v] of Object.entries(next)) {
      if (v) p.set(k, v);
      else p.delete(k);
    }
    setParams(p, { replace: true });
  };

  return (
    <div className="stack">
      <div className="page-head">
        <h1>Message traces</h1>
      </div>
      {/* one error for the chart and the list when the service is down (each said it) */}
      <ScreenErrors
        reads={[
          { name: 'Messages per day', error: analytics.error },
          { name: 'Traces', error: traces.error },
        ]}
        onRetry={() => void qc.invalidateQueries({ queryKey: ['traces'] })}
      />
      <section className="panel" aria-label="Analytics">
        <div className="toolbar">
          <h2>Messages per day by status</h2>
          <label className="field inline">
            <span>Period</span>
            <select value={days} onChange={(e) => setDays(Number(e.target.value))}>
              <option value={7}>7 days</option>
              <option value={14}>14 days</option>
              <option value={30}>30 days</option>
            </select>
          </label>
        </div>
        <NotLoaded error={analytics.data ? null : analytics.error} />
        {analytics.isPending ? (
          // the chart's room is kept while it loads (an empty chart, hidden): it came above the trace filters and
          // moved them under the pointer (309 px down in a 1,360 px wide window)
          <>
            <p className="muted" role="status">
              Loading…
            </p>
            <div className="chart-reserve" aria-hidden="true">
              <DailyChart a={NO_ANALYTICS} reserve />
            </div>
          </>
        ) : null}
        {analytics.data ? (
          <>
            <p className="muted">
              {analytics.data.totalMessages} {analytics.data.totalMessages === 1 ? 'message' : 'messages'} from {analytics.data.period.start.slice(0, 10)} to {analytics.data.period.end.slice(0, 10)} (UTC)
            </p>
            <DailyChart a={analytics.data} />
          </>
        ) : null}
      </section>
      <section className="panel" aria-label="Traces">
        <h2>Traces</h2>
        <form
          className="filters"
          aria-label="Trace filters"
          onSubmit={(e) => {
            e.preventDefault();
            setFilter({ instance: draft.instance.trim(), phone: draft.phone.trim() });
          }}
        >
          <label className="field inline">
            <span>Instance</span>
            <input value={draft.instance} onChange={(e) => setDraft({ ...draft, instance: e.target.value })} />
          </label>
          <label className="field inline">
            <span>Phone</span>
            <input value={draft.phone} onChange={(e) => setDraft({ ...draft, phone: e.target.value })} placeholder="+15550102000" />
          </label>
          <label className="field inline">
            <span>Status</span>
            <select value={filters.status ?? ''} onChange={(e) => setFilter({ status: e.target.value })}>
              <option value="">any</option>
              {TRACE_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Apply</button>
        </form>
        <NotLoaded error={traces.data ? null : traces.error} />
        {traces.data ? <p className="muted">{traces.data.total} matching</p> : null}
        <ListTable
          label="Trace list"
          items={traces.data?.traces}
          loading={traces.isPending}
          empty={filters.instance || filters.phone || filters.status ? 'No traces match these filters.' : 'No traces yet: the trace service has recorded no messages. A sender records each message it sends with POST /api/v1/traces on the trace service (docs/traces.md).'}
          columns={['Trace', 'Sent', 'Instance', 'To', 'Message', 'Status']}
          wide={['Sent', 'Instance', 'To', 'Message', 'Status']}
          narrow={['Trace']}
          row={(t) => {
            const sent = new Date(t.sentAt).toLocaleString();
            const message = t.message.length > 80 ? `${t.message.slice(0, 80)}…` : t.message;
            const whole = t.message.length > 80 ? t.message : undefined;
            const status = <span className={`badge trace-${t.status}`}>{t.status}</span>;
            return (
              <tr key={t.id} data-trace={t.messageId}>
                {/* a narrow box (a phone): the message, the row's main text, and the rest under it, one column; as five
                    columns the message started at the box's right edge, past it with the status */}
                <td className="narrow-col long-text" title={whole}>
                  {message}
                  <RowFacts
                    label="About this message"
                    always
                    facts={[
                      { value: status },
                      { name: 'Sent', value: sent },
                      { name: 'Instance', value: <Name>{t.instance}</Name> },
                      { name: 'To', value: <span className="mono">{t.to}</span> },
                    ]}
                  />
                </td>
                <td className="wide-only">{sent}</td>
                <td className="wide-only">
                  <Name>{t.instance}</Name>
                </td>
                <td className="mono wide-only">{t.to}</td>
                <td className="long-text trace-message wide-only" title={whole}>
                  {message}
                </td>
                <td className="wide-only">{status}</td>
              </tr>
            );
          }}
        />
      </section>
    </div>
  );
}
