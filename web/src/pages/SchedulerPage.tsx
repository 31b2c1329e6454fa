/**
 * Scheduler: sources with their health (check now), workflows (run now), schedules (cron, zone, next run, pause and
 * resume), executions (stop, logs). The scheduler service has no event stream, so this screen refetches when the
 * window gets focus and after each action, never on a timer while it answers (a read that found it down is sent again
 * every 5 s until it loads: api/unavailable.ts; docs/ui.md). The four lists are one read (useSchedulerLists), so
 * they show together (none moves under the pointer when another arrives) and come back together after an outage, and
 * an error is said once for the screen, above the sections, however many lists it left empty.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import {
  checkSourceHealth,
  type Execution,
  runWorkflow,
  SCHEDULER_LISTS,
  type SchedulerList,
  setSchedulePaused,
  stopExecution,
  useExecutionLogs,
  useSchedulerLists,
} from '../api/scheduler';
import { useErrorKept } from '../api';
import { Dialog, ErrorMessage, formatDuration, ListTable, Name, NotLoaded, RowFacts, ScreenErrors, parseSchedulerDuration, showError, showToast, useDocumentTitle } from '../components';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

/**
 * An execution's duration in the board's words ("0.1 s", "1 min 5 s": components/duration.ts), from its start and end
 * (both the server's times); while it runs, the span the API gave as of its answer ("83ms": it showed that text).
 */
function executionDuration(e: Execution): string {
  if (e.completedAt) return formatDuration((Date.parse(e.completedAt) - Date.parse(e.startedAt)) / 1000);
  const seconds = parseSchedulerDuration(e.duration);
  return seconds === null ? (e.duration ?? '—') : formatDuration(seconds);
}

/**
 * The row actions: each one's button is off while its request waits for its answer (`busy(key)`), also while another
 * row's action is on its way (one key at a time let the first button back on when a second was clicked).
 */
function useAction() {
  const qc = useQueryClient();
  const [pending, setPending] = useState<ReadonlySet<string>>(new Set());
  const run = async (key: string, fn: () => Promise<unknown>, done?: string) => {
    if (pending.has(key)) return;
    setPending((p) => new Set(p).add(key));
    try {
      await fn();
      if (done) showToast('info', done);
    } catch (err) {
      // a scheduler down says so, and that the click is not sent again by itself (as a dialog's error says it)
      showError(err, { action: true });
    } finally {
      setPending((p) => {
        const next = new Set(p);
        next.delete(key);
        return next;
      });
      await qc.invalidateQueries({ queryKey: ['scheduler'] });
    }
  };
  return { busy: (key: string) => pending.has(key), run };
}

const LIST_TITLES: Record<SchedulerList, string> = { sources: 'Sources', workflows: 'Workflows', schedules: 'Schedules', executions: 'Executions' };

/** One of the four lists; `error` is why it is empty (said above the sections: ScreenErrors). */
function Section({ title, error, children }: { title: string; error: unknown; children: React.ReactNode }) {
  return (
    <section className="panel" aria-label={title}>
      <h2>{title}</h2>
      <NotLoaded error={error} />
      {children}
    </section>
  );
}

/** Lines the logs dialog reads at first and adds on each "Show more" (the API pages at most 10,000 a request). */
const LOG_PAGE = 2000;
/** The most the dialog shows: one page of the API (a browser's text view of more is slow to scroll anyway). */
const MAX_DIALOG_LINES = 10_000;

function LogsDialog({ execution, onClose }: { execution: Execution; onClose: () => void }) {
  const [limit, setLimit] = useState(LOG_PAGE);
  const logs = useExecutionLogs(execution.id, limit);
  const shown = logs.data?.logs.length ?? 0;
  const total = logs.data?.total ?? 0;
  return (
    <Dialog open title={`Logs of ${execution.workflow} (${execution.status})`} onClose={onClose} className="dialog-logs">
      {logs.error ? <ErrorMessage error={logs.error} onRetry={() => void logs.refetch()} /> : null}
      {/* a line each (`.exec-line`): a long one wraps with the lines after its first indented, so it reads as one (they
          started at the left edge, as the next line does); the text, copied, is the lines one a row as before */}
      <pre className="exec-log" role="log" aria-label="Execution logs">
        {shown
          ? logs.data?.logs.map((l, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: the lines of one execution's log, in their order, only ever added to
              <span key={i} className="exec-line">
                {`${l.timestamp} ${l.level.toUpperCase()} ${l.message}${i < shown - 1 ? '\n' : ''}`}
              </span>
            ))
          : logs.isPending
            ? 'Loading…'
            : '(no log lines)'}
      </pre>
      {total > shown ? (
        <p className="muted log-more">
          Showing the first {shown.toLocaleString('en-US')} of {total.toLocaleString('en-US')} lines.{' '}
          {limit < MAX_DIALOG_LINES ? (
            <button type="button" className="small" disabled={logs.isFetching} onClick={() => setLimit((l) => Math.min(l + LOG_PAGE, MAX_DIALOG_LINES))}>
              Show {Math.min(LOG_PAGE, total - shown).toLocaleString('en-US')} more
            </button>
          ) : (
            <>
              Read the rest from the scheduler API: <code>GET /api/v1/executions/{execution.id}/logs?offset={MAX_DIALOG_LINES}&amp;limit={MAX_DIALOG_LINES}</code> (without <code>limit</code>, a page of 1,000 lines), and on with <code>offset</code> until it reaches <code>total</code>.
            </>
          )}
        </p>
      ) : null}
      <div className="dialog-actions">
        <button type="button" onClick={() => void logs.refetch()}>
          Refresh
        </button>
        <button type="button" className="primary" data-autofocus onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

export function SchedulerPage() {
  useDocumentTitle('Scheduler');
  // its error stays while it is tried again (every 5 s while the service is down): it blinked away at each try
  const lists = useErrorKept(useSchedulerLists());
  const { busy, run } = useAction();
  const qc = useQueryClient();
  const [logsOf, setLogsOf] = useState<Execution | null>(null);
  const data = lists.data;
  // the read's own error (the service down, or refusing) is every list's; another is one list's (a 500 of its route)
  const reads = SCHEDULER_LISTS.map((name) => ({ name: LIST_TITLES[name], error: lists.error ?? data?.errors[name] }));
  // why a list is empty: the error that left it so (kept lists stay shown under a later error, as they were)
  const notLoaded = (name: SchedulerList) => (data?.[name] ? null : (lists.error ?? data?.errors[name]));
  const refresh = () => void qc.invalidateQueries({ queryKey: ['scheduler'] });

  return (
    <div className="stack">
      <div className="page-head">
        <h1>Scheduler</h1>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      <ScreenErrors reads={reads} onRetry={refresh} />

      <Section title="Sources" error={notLoaded('sources')}>
        <ListTable
          label="Sources"
          items={data?.sources}
          loading={lists.isPending}
          empty={
            <>
              No sources. Add a flow platform with <code>armada sources add --type TYPE --url URL</code>.
            </>
          }
          columns={['Name', 'Type', 'URL', 'Health', 'Last check']}
          wide={['Type', 'URL', 'Health', 'Last check']}
          actions
          row={(s) => {
            const healthy = s.status === 'active' && !s.last_health_error;
            const health = <span className={`badge ${healthy ? 'health-ok' : 'health-bad'}`}>{healthy ? 'healthy' : 'unhealthy'}</span>;
            const error = s.last_health_error ? <div className="muted">{s.last_health_error}</div> : null;
            return (
              <tr key={s.id} data-source={s.name}>
                {/* a narrow box (a phone): the other columns under the name (RowFacts), as on Projects and Approvals;
                    as columns, they scrolled sideways under the pinned Check now */}
                <td className="long-text">
                  <Name>{s.name}</Name>
                  <RowFacts
                    label={`About ${s.name}`}
                    facts={[
                      { value: health },
                      { name: 'Type', value: <Name>{s.source_type}</Name> },
                      { name: 'URL', value: <span className="mono">{s.url}</span>, wraps: true },
                      { name: 'Last check', value: when(s.last_health_check), wraps: true },
                    ]}
                  >
                    {error}
                  </RowFacts>
                </td>
                <td className="wide-only">
                  <Name>{s.source_type}</Name>
                </td>
                <td className="mono long-text wide-only">{s.url}</td>
                <td className="long-text wide-only">
                  {health}
                  {error}
                </td>
                <td className="wide-only">{when(s.last_health_check)}</td>
                <td className="actions-cell">
                  <button
                    type="button"
                    className="small"
                    disabled={busy(`health:${s.id}`)}
                    aria-label={`Check health of ${s.name}`}
                    onClick={() => void run(`health:${s.id}`, () => checkSourceHealth(s.id))}
                  >
                    Check now
                  </button>
                </td>
              </tr>
            );
          }}
        />
      </Section>

      <Section title="Workflows" error={notLoaded('workflows')}>
        <ListTable
          label="Workflows"
          items={data?.workflows}
          loading={lists.isPending}
          empty={
            <>
              No workflows. They are defined through the scheduler's API, <code>POST /api/v1/workflows</code> (docs/scheduler.md).
            </>
          }
          columns={['Name', 'Description', 'Tasks', 'Last run']}
          wide={['Description', 'Tasks', 'Last run']}
          actions
          row={(w) => {
            const tasks = w.tasks.map((t) => `${t.name} (${t.type})`).join(', ');
            return (
              <tr key={w.name} data-workflow={w.name}>
                <td className="long-text">
                  <Name>{w.name}</Name>
                  {/* a narrow box: its description under its name, as a project's is */}
                  {w.description ? <div className="muted narrow-only">{w.description}</div> : null}
                  <RowFacts
                    label={`About ${w.name}`}
                    facts={[
                      { name: 'Tasks', value: tasks, wraps: true },
                      { name: 'Last run', value: when(w.lastRun), wraps: true },
                    ]}
                  />
                </td>
                <td className="long-text wide-only">{w.description || <span className="muted">—</span>}</td>
                <td className="long-text wide-only">{tasks}</td>
                <td className="wide-only">{when(w.lastRun)}</td>
                <td className="actions-cell">
                  <button
                    type="button"
                    className="primary small"
                    disabled={busy(`run:${w.name}`)}
                    aria-label={`Run ${w.name} now`}
                    onClick={() => void run(`run:${w.name}`, () => runWorkflow(w.name), `${w.name} started`)}
                  >
                    Run now
                  </button>
                </td>
              </tr>
            );
          }}
        />
      </Section>

      <Section title="Schedules" error={notLoaded('schedules')}>
        <ListTable
          label="Schedules"
          items={data?.schedules}
          loading={lists.isPending}
          empty={
            <>
              No scheduled workflows. Give one a schedule with <code>armada schedules add WORKFLOW --cron EXPR</code>.
            </>
          }
          columns={['Workflow', 'Cron', 'Zone', 'Next run', 'State']}
          wide={['Cron', 'Zone', 'Next run', 'State']}
          actions
          row={(s) => {
            const state = <span className={`badge ${s.enabled ? 'health-ok' : 'health-bad'}`}>{s.enabled ? 'active' : 'paused'}</span>;
            const next = s.enabled ? when(s.nextRun) : '— (paused)';
            return (
              <tr key={s.workflow} data-schedule={s.workflow}>
                <td className="long-text">
                  <Name>{s.workflow}</Name>
                  <RowFacts
                    label={`About the schedule of ${s.workflow}`}
                    facts={[
                      { value: state },
                      { name: 'Cron', value: <span className="mono">{s.schedule}</span> },
                      { name: 'Zone', value: s.timezone, wraps: true },
                      { name: 'Next run', value: next, wraps: true },
                    ]}
                  />
                </td>
                <td className="mono nowrap wide-only">{s.schedule}</td>
                <td className="wide-only">{s.timezone}</td>
                <td className="wide-only">{next}</td>
                <td className="wide-only">{state}</td>
                <td className="actions-cell">
                  <button
                    type="button"
                    className="small"
                    disabled={busy(`pause:${s.workflow}`)}
                    aria-label={`${s.enabled ? 'Pause' : 'Resume'} ${s.workflow}`}
                    onClick={() => void run(`pause:${s.workflow}`, () => setSchedulePaused(s.workflow, s.enabled))}
                  >
                    {s.enabled ? 'Pause' : 'Resume'}
                  </button>
                </td>
              </tr>
            );
          }}
        />
      </Section>

      <Section title="Executions" error={notLoaded('executions')}>
        <ListTable
          label="Executions"
          items={data?.executions}
          loading={lists.isPending}
          empty="No executions yet. Run now on a workflow, or its schedule, starts one."
          columns={['Workflow', 'Status', 'Trigger', 'Started', 'Duration']}
          wide={['Status', 'Trigger', 'Started', 'Duration']}
          actions
          row={(e) => {
            const status = <span className={`badge exec-${e.status}`}>{e.status}</span>;
            const error = e.error ? (
              <div className="muted clamp" title={e.error}>
                {e.error}
              </div>
            ) : null;
            return (
              <tr key={e.id} data-execution={e.id}>
                <td className="long-text">
                  <Name>{e.workflow}</Name>
                  <RowFacts
                    label={`About execution ${e.id}`}
                    facts={[
                      { value: status },
                      { name: 'Trigger', value: e.trigger },
                      { name: 'Started', value: when(e.startedAt), wraps: true },
                      { name: 'Duration', value: executionDuration(e) },
                    ]}
                  >
                    {error}
                  </RowFacts>
                </td>
                <td className="long-text wide-only">
                  {status}
                  {error}
                </td>
                <td className="wide-only">{e.trigger}</td>
                <td className="wide-only">{when(e.startedAt)}</td>
                <td className="wide-only">{executionDuration(e)}</td>
                <td className="actions-cell">
                  <button type="button" className="small" aria-label={`Logs of execution ${e.id}`} onClick={() => setLogsOf(e)}>
                    Logs
                  </button>
                  {e.status === 'running' ? (
                    <button
                      type="button"
                      className="danger small"
                      disabled={busy(`stop:${e.id}`)}
                      aria-label={`Stop execution ${e.id}`}
                      onClick={() => void run(`stop:${e.id}`, () => stopExecution(e.id), 'Execution stopped')}
                    >
                      Stop
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          }}
        />
      </Section>
      {logsOf ? <LogsDialog execution={logsOf} onClose={() => setLogsOf(null)} /> : null}
    </div>
  );
}
