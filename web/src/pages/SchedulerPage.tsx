/**
 * Scheduler: sources with their health (check now), workflows (run now), schedules (cron, zone, next run, pause and
 * resume), executions (stop, logs). The scheduler service has no event stream, so this screen refetches when the
 * window gets focus and after each action, never on a timer while it answers (a read that found it down is sent again
 * every 5 s until it loads: api/unavailable.ts; docs/ui.md). The service down is said once for the screen, and the
 * tables show when all four lists have come, so none moves under the pointer when another arrives.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import {
  checkSourceHealth,
  type Execution,
  runWorkflow,
  setSchedulePaused,
  stopExecution,
  useExecutionLogs,
  useExecutions,
  useSchedules,
  useSources,
  useWorkflows,
} from '../api/scheduler';
import { isUnavailable } from '../api';
import { Dialog, ErrorMessage, ListTable, showError, showToast } from '../components';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

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

interface Read {
  data?: unknown;
  error: unknown;
  isPending: boolean;
  refetch: () => unknown;
}

/**
 * One of the four lists. The scheduler service down is said once, above the sections (`down`; it was said in each of
 * the four): a section whose read failed so says only that it is not loaded. Another error (a 500) is its own, said in
 * it with Retry. The table itself comes with `items` (undefined while the screen settles: ListTable's "Loading…").
 */
function Section({ title, query, children }: { title: string; query: Read; children: React.ReactNode }) {
  const down = isUnavailable(query.error);
  return (
    <section className="panel" aria-label={title}>
      <h2>{title}</h2>
      {query.error && !down ? <ErrorMessage error={query.error} onRetry={() => void query.refetch()} /> : null}
      {down && query.data === undefined ? <p className="muted">Not loaded: the scheduler service is unavailable (above).</p> : null}
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
      <pre className="log-view" role="log" aria-label="Execution logs">
        {shown ? logs.data?.logs.map((l) => `${l.timestamp} ${l.level.toUpperCase()} ${l.message}`).join('\n') : logs.isPending ? 'Loading…' : '(no log lines)'}
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
  const sources = useSources();
  const workflows = useWorkflows();
  const schedules = useSchedules();
  const executions = useExecutions();
  const { busy, run } = useAction();
  const qc = useQueryClient();
  const [logsOf, setLogsOf] = useState<Execution | null>(null);
  const reads: Read[] = [sources, workflows, schedules, executions];
  // the service down (503, no answer): one error for the screen, naming it and saying the screen reads again by itself
  const down = reads.map((r) => r.error).find(isUnavailable);
  // each table shows once all four reads have answered (or failed): one that came first moved, buttons and all, when a
  // list above it came (a click landed beside its button); they all ask the same service, so they come together
  const settling = reads.some((r) => r.isPending && !r.error);
  const shown = <T,>(q: { data?: T }) => (settling ? undefined : q.data);
  const refresh = () => void qc.invalidateQueries({ queryKey: ['scheduler'] });

  return (
    <div className="stack">
      <div className="page-head">
        <h1>Scheduler</h1>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      {down ? <ErrorMessage error={down} onRetry={refresh} /> : null}

      <Section title="Sources" query={sources}>
        <ListTable
          label="Sources"
          items={shown(sources)}
          loading={settling && !sources.error}
          empty="No sources."
          columns={['Name', 'Type', 'URL', 'Health', 'Last check']}
          actions
          row={(s) => {
            const healthy = s.status === 'active' && !s.last_health_error;
            return (
              <tr key={s.id} data-source={s.name}>
                <td>{s.name}</td>
                <td>{s.source_type}</td>
                <td className="mono long-text">{s.url}</td>
                <td className="long-text">
                  <span className={`badge ${healthy ? 'health-ok' : 'health-bad'}`}>{healthy ? 'healthy' : 'unhealthy'}</span>
                  {s.last_health_error ? <div className="muted">{s.last_health_error}</div> : null}
                </td>
                <td>{when(s.last_health_check)}</td>
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

      <Section title="Workflows" query={workflows}>
        <ListTable
          label="Workflows"
          items={shown(workflows)}
          loading={settling && !workflows.error}
          empty="No workflows."
          columns={['Name', 'Description', 'Tasks', 'Last run']}
          actions
          row={(w) => (
            <tr key={w.name} data-workflow={w.name}>
              <td>{w.name}</td>
              <td className="long-text">{w.description || <span className="muted">—</span>}</td>
              <td className="long-text">{w.tasks.map((t) => `${t.name} (${t.type})`).join(', ')}</td>
              <td>{when(w.lastRun)}</td>
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
          )}
        />
      </Section>

      <Section title="Schedules" query={schedules}>
        <ListTable
          label="Schedules"
          items={shown(schedules)}
          loading={settling && !schedules.error}
          empty="No scheduled workflows."
          columns={['Workflow', 'Cron', 'Zone', 'Next run', 'State']}
          actions
          row={(s) => (
            <tr key={s.workflow} data-schedule={s.workflow}>
              <td>{s.workflow}</td>
              <td className="mono">{s.schedule}</td>
              <td>{s.timezone}</td>
              <td>{s.enabled ? when(s.nextRun) : '— (paused)'}</td>
              <td>
                <span className={`badge ${s.enabled ? 'health-ok' : 'health-bad'}`}>{s.enabled ? 'active' : 'paused'}</span>
              </td>
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
          )}
        />
      </Section>

      <Section title="Executions" query={executions}>
        <ListTable
          label="Executions"
          items={shown(executions)}
          loading={settling && !executions.error}
          empty="No executions yet."
          columns={['Workflow', 'Status', 'Trigger', 'Started', 'Duration']}
          actions
          row={(e) => (
            <tr key={e.id} data-execution={e.id}>
              <td>{e.workflow}</td>
              <td className="long-text">
                <span className={`badge exec-${e.status}`}>{e.status}</span>
                {e.error ? (
                  <div className="muted clamp" title={e.error}>
                    {e.error}
                  </div>
                ) : null}
              </td>
              <td>{e.trigger}</td>
              <td>{when(e.startedAt)}</td>
              <td>{e.duration ?? '—'}</td>
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
          )}
        />
      </Section>
      {logsOf ? <LogsDialog execution={logsOf} onClose={() => setLogsOf(null)} /> : null}
    </div>
  );
}
