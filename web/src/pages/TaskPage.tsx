/**
 * The Task screen (/tasks/:id): the task, its attempts, and the selected attempt (?attempt=) with its live log, its
 * diff, merge, pull request and follow-ups. Live: the task's events on `/ws/events` (topic task:<id>: status changes,
 * attempt and process lifecycle) refetch the task and the attempt; the log and the diff have their own streams.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { ApiError, api, apiPage, type ProjectDetail, queryKeys, type Task, type TaskDetail, useWebSocketStream, eventStreamResume } from '../api';
import { ConfirmDialog, ErrorMessage, Field, formatCost, useDocumentTitle } from '../components';
import { AttemptTable } from '../components/task/AttemptTable';
import { CompareDialog } from '../components/task/CompareDialog';
import { CreatePrDialog } from '../components/task/CreatePrDialog';
import { FollowUpPanel } from '../components/task/FollowUpPanel';
import { LogView } from '../components/task/LogView';
import { MergeDialog } from '../components/task/MergeDialog';
import { ActionButton } from '../components/task/ActionButton';
import { CleanupNote } from '../components/task/CleanupNote';
import { mergeRefusal } from '../components/task/mergeRefusal';
import { pullRequestRefusal } from '../components/task/pullRequestRefusal';
import { Elapsed } from '../components/task/Elapsed';
import { StartAttemptDialog } from '../components/task/StartAttemptDialog';
import { NotFoundPage } from './NotFoundPage';
import { STATUS_LABELS } from './board/columns';
import { type Attempt, type ProcessInfo, RUNNING_STATUSES } from '../components/task/taskTypes';

import '../components/task/task.css';

const DiffView = lazy(async () => ({ default: (await import('../components/task/DiffView')).DiffView }));

/** A message of `/ws/events` (api/task/eventStream.ts). */
interface TaskEvent {
  seq: number;
  cursor?: string;
  type: string;
  data: { attemptId?: string; taskId?: string };
}

function AttemptPanel({ attempt, task, projectId }: { attempt: Attempt; task: TaskDetail; projectId: string }) {
  const qc = useQueryClient();
  const processes = useQuery({
    queryKey: queryKeys.attemptProcesses(attempt.id),
    queryFn: ({ signal }) => apiPage<ProcessInfo>('/processes', { query: { attemptId: attempt.id, limit: 100 }, signal }),
  });
  const runs = [...(processes.data?.data ?? [])].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  const [pickedRun, setPickedRun] = useState<string | null>(null);
  const runId = (pickedRun && runs.some((r) => r.id === pickedRun) ? pickedRun : runs.at(-1)?.id) ?? attempt.processId;
  // the run shown has ended (its log then sized to its lines): as its runs say, or, before they are read, the attempt
  const shownRun = runs.find((r) => r.id === runId);
  const [dialog, setDialog] = useState<'merge' | 'pr' | 'cancel' | null>(null);
  const running = RUNNING_STATUSES.includes(attempt.status);
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: queryKeys.attempt(attempt.id) });
    void qc.invalidateQueries({ queryKey: queryKeys.task(task.id) });
  };
  const cancel = useMutation({
    mutationFn: () => api(`/attempts/${attempt.id}/cancel`, { method: 'POST' }),
    meta: { inlineError: true }, // shown in the confirmation dialog
    onSuccess: () => {
      setDialog(null);
      refresh();
    },
  });

  return (
    <section className="attempt-panel" aria-label={`Attempt #${attempt.number}`}>
      <header className="attempt-header">
        <h2>
          Attempt #{attempt.number} <span className={`status status-${attempt.status}`}>{attempt.status}</span>
          {attempt.merged ? <span className="status status-merged">merged</span> : null}
        </h2>
        <div className="muted attempt-meta">
          {attempt.llm}
          {attempt.model ? ` (${attempt.model})` : ''} · {attempt.branch ?? 'no branch yet'}
          {attempt.baseBranch ? ` → ${attempt.baseBranch}` : ''} · <Elapsed id={attempt.id} seconds={attempt.duration} running={running} /> · {formatCost(attempt.cost.totalCost)} ·{' '}
          {attempt.cost.inputTokens + attempt.cost.outputTokens} tokens
          {attempt.mergeCommit ? ` · merge commit ${attempt.mergeCommit.slice(0, 10)}` : ''}
        </div>
        {/* on a phone, Merge… and Create PR… halves of one row, with why either is disabled under them (`.attempt-actions`,
            task.css): each reason beside its button took the rest of the row, and left each button alone on its own */}
        <div className="button-row attempt-actions">
          {running ? (
            <button
              type="button"
              className="danger"
              onClick={() => {
                cancel.reset();
                setDialog('cancel');
              }}
            >
              Cancel attempt
            </button>
          ) : null}
          <ActionButton label="Merge…" primary refusal={mergeRefusal(attempt)} onClick={() => setDialog('merge')} />
          <ActionButton label="Create PR…" refusal={pullRequestRefusal(attempt)} onClick={() => setDialog('pr')} />
        </div>
      </header>
      {attempt.cleanupError ? <CleanupNote error={attempt.cleanupError} /> : null}
      {attempt.error ? (
        <div className="banner banner-error" role="alert">
          {attempt.error}
        </div>
      ) : null}
      {attempt.output.summary ? <p className="attempt-summary">{attempt.output.summary}</p> : null}
      <div className="attempt-grid">
        <section className="panel" aria-labelledby={`log-${attempt.id}`}>
          <div className="panel-title">
            <h2 id={`log-${attempt.id}`}>Log</h2>
            {runs.length > 1 ? (
              <Field label="Run" inline>
                <select value={runId ?? ''} onChange={(e) => setPickedRun(e.target.value)}>
                  {runs.map((r, i) => (
                    <option key={r.id} value={r.id}>
                      {i === 0 ? 'initial' : `follow-up ${i}`} ({r.status})
                    </option>
                  ))}
                </select>
              </Field>
            ) : null}
          </div>
          {runId ? (
            <LogView key={runId} processId={runId} finished={shownRun ? shownRun.status !== 'running' : !running} />
          ) : (
            <p className="muted">The agent has not started yet.</p>
          )}
        </section>
        <section className="panel" aria-labelledby={`diff-${attempt.id}`}>
          <h2 id={`diff-${attempt.id}`}>Diff</h2>
          <Suspense fallback={<p className="muted">Loading the diff viewer…</p>}>
            <DiffView attemptId={attempt.id} runKey={`${runs.length}:${attempt.status}`} running={running} onEnd={refresh} />
          </Suspense>
        </section>
      </div>
      <FollowUpPanel
        attemptId={attempt.id}
        projectId={projectId}
        refusal={
          attempt.status === 'cancelled'
            ? 'A cancelled attempt takes no follow-up: start a new attempt to go on.'
            : attempt.status === 'created'
              ? 'Follow-ups can be sent once the agent has started.'
              : null
        }
      />
      <MergeDialog open={dialog === 'merge'} attempt={attempt} taskTitle={task.title} onClose={() => setDialog(null)} />
      <CreatePrDialog open={dialog === 'pr'} attempt={attempt} taskTitle={task.title} onClose={() => setDialog(null)} />
      <ConfirmDialog
        open={dialog === 'cancel'}
        title="Cancel attempt"
        message={`Stop the agent of attempt #${attempt.number}? Its worktree stays.`}
        confirmLabel="Cancel attempt"
        danger
        busy={cancel.isPending}
        error={cancel.error}
        onConfirm={() => cancel.mutate()}
        onCancel={() => setDialog(null)}
      />
    </section>
  );
}

export function TaskPage() {
  const { id = '' } = useParams();
  const qc = useQueryClient();
  const [params, setParams] = useSearchParams();
  const task = useQuery({ queryKey: queryKeys.task(id), queryFn: ({ signal }) => api<TaskDetail>(`/tasks/${id}`, { signal }), meta: { inlineError: true } });
  const projectId = task.data?.projectId;
  const project = useQuery({
    queryKey: queryKeys.project(projectId ?? ''),
    queryFn: ({ signal }) => api<ProjectDetail>(`/projects/${projectId}`, { signal }),
    enabled: !!projectId,
  });
  const attempts = task.data?.attempts ?? [];
  const latest = [...attempts].sort((a, b) => b.number - a.number)[0];
  const selectedId = params.get('attempt') ?? latest?.id ?? null;
  const attempt = useQuery({
    queryKey: queryKeys.attempt(selectedId ?? ''),
    queryFn: ({ signal }) => api<Attempt>(`/attempts/${selectedId}`, { signal }),
    enabled: !!selectedId,
    meta: { inlineError: true },
  });
  const select = (attemptId: string) => setParams({ attempt: attemptId }, { replace: true });
  const [dialog, setDialog] = useState<'start' | 'compare' | 'cancelTask' | null>(null);
  const [compareIds, setCompareIds] = useState<string[]>([]);

  const refreshTask = (attemptId?: string) => {
    void qc.invalidateQueries({ queryKey: queryKeys.task(id) });
    if (attemptId) void qc.invalidateQueries({ queryKey: queryKeys.attempt(attemptId), exact: true });
  };
  // the task's domain events (task.status_changed, attempt.*, process_*), resumed after a reconnect from the last message's cursor
  useWebSocketStream<TaskEvent>(`/ws/events?topics=${encodeURIComponent(`task:${id}`)}`, {
    ...eventStreamResume<TaskEvent>(),
    onReset: () => {
      refreshTask(selectedId ?? undefined);
      if (selectedId) void qc.invalidateQueries({ queryKey: queryKeys.attemptProcesses(selectedId) });
    },
    onMessage: (m) => {
      if (m.type === 'process_progress') return;
      const attemptId = m.data.attemptId;
      refreshTask(attemptId ?? selectedId ?? undefined);
      if (attemptId && m.type.startsWith('process_')) void qc.invalidateQueries({ queryKey: queryKeys.attemptProcesses(attemptId) });
    },
  });

  // the board of the project keeps this task's card in its cache: give it the status this screen saw last
  const status = task.data?.status;
  useEffect(() => {
    if (!projectId || !status) return;
    qc.setQueryData<Task[]>(queryKeys.projectTasks(projectId), (old) => old?.map((t) => (t.id === id && t.status !== status ? { ...t, status } : t)));
  }, [qc, projectId, id, status]);

  const profiles = Object.keys(project.data?.config.llms ?? {}).sort();
  const cancelTask = useMutation({
    mutationFn: () => api(`/tasks/${id}/cancel`, { method: 'POST' }),
    meta: { inlineError: true }, // shown in the confirmation dialog
    onSuccess: () => {
      setDialog(null);
      refreshTask(selectedId ?? undefined);
    },
  });

  const missing = task.error instanceof ApiError && task.error.status === 404;
  // the tab and the history name the task ("Fix login bug · Armada"), not just the app
  useDocumentTitle(missing ? 'Task not found' : (task.data?.title ?? (task.error ? 'Task' : 'Loading task…')));

  // a task that does not exist (deleted, or a mistyped address) gets the board's not-found screen, not an error banner
  if (missing) {
    return <NotFoundPage title="Task not found">There is no task {id}: it may have been deleted, or the address is mistyped.</NotFoundPage>;
  }
  if (task.error) return <ErrorMessage error={task.error} onRetry={() => void task.refetch()} />;
  if (!task.data) return <p className="muted">Loading…</p>;
  const t = task.data;
  const runningCount = attempts.filter((a) => RUNNING_STATUSES.includes(a.status)).length;
  const running = runningCount > 0;
  return (
    <div className="task-page">
      <nav className="breadcrumbs" aria-label="Breadcrumbs">
        <Link to={`/projects/${t.projectId}`}>{project.data?.name ?? 'Board'}</Link> / <span>Task</span>
      </nav>
      <header className="task-header">
        <h1>{t.title}</h1>
        <div className="task-tags">
          {/* in the board's words (its column, its status select): it said "pending" where the board says "To do" */}
          <span className={`status status-${t.status}`} title={`Status: ${t.status}`}>
            {STATUS_LABELS[t.status]}
          </span>
          <span className={`priority priority-${t.priority}`}>{t.priority}</span>
          {t.labels.map((l) => (
            <span key={l} className="label">
              {l}
            </span>
          ))}
          {t.assignee ? <span className="muted">assignee {t.assignee}</span> : null}
        </div>
      </header>
      {t.description ? <p className="task-description">{t.description}</p> : <p className="muted">No description.</p>}

      <section className="panel" aria-labelledby="attempts-title">
        <div className="panel-title">
          <h2 id="attempts-title">Attempts</h2>
          <span className="muted">
            {t.stats.totalAttempts} total · {t.stats.successfulAttempts} completed · {t.stats.failedAttempts} failed · {formatCost(t.stats.totalCost)}
          </span>
          <div className="button-row">
            <button type="button" className="primary" onClick={() => setDialog('start')}>
              Start attempt…
            </button>
            {/* it was only off, with no word on what turns it on */}
            <ActionButton
              label="Compare selected"
              refusal={attempts.length < 2 ? 'Compare needs two attempts.' : compareIds.length !== 2 ? 'Tick two attempts to compare.' : null}
              onClick={() => setDialog('compare')}
            />
            {running ? (
              <button
                type="button"
                disabled={cancelTask.isPending}
                onClick={() => {
                  cancelTask.reset();
                  setDialog('cancelTask');
                }}
              >
                Cancel task
              </button>
            ) : null}
          </div>
        </div>
        <AttemptTable
          attempts={attempts}
          selectedId={selectedId}
          onSelect={select}
          compareIds={compareIds}
          onToggleCompare={(aid) => setCompareIds((ids) => (ids.includes(aid) ? ids.filter((x) => x !== aid) : [...ids, aid].slice(-2)))}
        />
      </section>

      {attempt.error ? <ErrorMessage error={attempt.error} onRetry={() => void attempt.refetch()} /> : null}
      {attempt.isLoading ? (
        <p className="muted" role="status">
          Loading the attempt…
        </p>
      ) : null}
      {attempt.data && attempt.data.id === selectedId ? <AttemptPanel key={attempt.data.id} attempt={attempt.data} task={t} projectId={t.projectId} /> : null}

      <StartAttemptDialog
        open={dialog === 'start'}
        taskId={id}
        profiles={profiles}
        defaultProfile={t.assignee ?? project.data?.defaultLLM ?? null}
        onClose={() => setDialog(null)}
        onStarted={select}
      />
      {/* it stopped every running attempt at one click, where Cancel attempt asks first */}
      <ConfirmDialog
        open={dialog === 'cancelTask'}
        title="Cancel task"
        message={
          runningCount === 0
            ? `No attempt of “${t.title}” runs any more: there is nothing to stop.`
            : runningCount === 1
              ? `Stop the agent of the running attempt of “${t.title}”? Its worktree stays.`
              : `Stop the agents of the ${runningCount} running attempts of “${t.title}”? Their worktrees stay.`
        }
        confirmLabel="Cancel task"
        danger
        busy={cancelTask.isPending}
        error={cancelTask.error}
        onConfirm={() => cancelTask.mutate()}
        onCancel={() => setDialog(null)}
      />
      {compareIds.length === 2 ? (
        <CompareDialog
          open={dialog === 'compare'}
          attemptIds={[compareIds[0] as string, compareIds[1] as string]}
          numbers={Object.fromEntries(attempts.map((a) => [a.id, a.number]))}
          onClose={() => setDialog(null)}
        />
      ) : null}
    </div>
  );
}
