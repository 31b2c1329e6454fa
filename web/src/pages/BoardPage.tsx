/**
 * A project's board: a column per status group with counts, cards that move by drag and drop or their status
 * select, filters kept in the URL, create/edit task, apply a template, bulk status change and delete. The task list
 * is one query; /ws/events patches it live (a task created anywhere shows within a second), so nothing polls.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import {
  ApiError,
  api,
  bulkDeleteTasks,
  bulkUpdateTasks,
  createTask,
  patchTask,
  queryKeys,
  removeTasks,
  TASK_PRIORITIES,
  TASK_STATUSES,
  type Task,
  type TaskFields,
  type TaskStatus,
  upsertTasks,
  useProject,
  useProjectTaskEvents,
  useProjectTasks,
} from '../api';
import { ConfirmDialog, ErrorMessage, Field, showToast, useDocumentTitle } from '../components';
import { NotFoundPage } from './NotFoundPage';
import { BoardColumnView } from './board/BoardColumnView';
import { ColumnStrip } from './board/ColumnStrip';
import { LabelsFilter } from './board/LabelsFilter';
import { type BoardFilters, COLUMNS, filtersFrom, matches, STATUS_LABELS } from './board/columns';
import { TaskDialog } from './board/TaskDialog';
import { writeTaskDraft } from './board/taskDraft';
import { writeTaskEdits } from './board/taskEdits';
import { TemplateDialog } from './board/TemplateDialog';

export function BoardPage() {
  const { id = '' } = useParams();
  const qc = useQueryClient();
  // shown here, not toasted: a project that does not exist is this screen's "Project not found"
  const project = useProject(id, { inlineError: true });
  const projectMissing = project.error instanceof ApiError && project.error.status === 404;
  // the list loads once the live stream is open, so nothing created in between is missed
  const streamReady = useProjectTaskEvents(id);
  const tasks = useProjectTasks(id, streamReady);
  const [params, setParams] = useSearchParams();
  const filters = useMemo(() => filtersFrom(params), [params]);
  const [selected, setSelected] = useState<Set<string>>(() => new Set());
  const [editing, setEditing] = useState<Task | 'new' | null>(null);
  const [templateOpen, setTemplateOpen] = useState(false);
  const boardRef = useRef<HTMLDivElement>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [bulkStatus, setBulkStatus] = useState<TaskStatus>('in_progress');

  const all = tasks.data;
  const visible = useMemo(() => (all ?? []).filter((t) => matches(t, filters)), [all, filters]);
  const byColumn = useMemo(() => COLUMNS.map((c) => visible.filter((t) => c.statuses.includes(t.status))), [visible]);
  const assignees = useMemo(() => [...new Set((all ?? []).map((t) => t.assignee).filter((a): a is string => !!a))].sort(), [all]);

  // the selection holds only tasks that exist: one deleted elsewhere (another tab, the API) leaves it, so the bulk
  // bar's count and the delete confirmation count what they act on
  useEffect(() => {
    if (!all) return;
    setSelected((prev) => {
      if (prev.size === 0) return prev;
      const ids = new Set(all.map((t) => t.id));
      const next = new Set([...prev].filter((t) => ids.has(t)));
      return next.size === prev.size ? prev : next;
    });
  }, [all]);
  // selected cards the filters hide are still acted on: the bulk bar and the confirmation say how many
  const hiddenSelected = useMemo(() => {
    if (!selected.size) return 0;
    const shown = new Set(visible.map((t) => t.id));
    return [...selected].filter((t) => !shown.has(t)).length;
  }, [selected, visible]);

  useEffect(() => {
    if (all && !performance.getEntriesByName('armada:board-rendered').length) performance.mark('armada:board-rendered');
  }, [all]);

  // what a screen reader says after a move (the card leaves where focus was, or a drop moved it out of sight)
  const [moveNews, setMoveNews] = useState('');
  const move = useMutation({
    mutationFn: ({ task, status }: { task: Task; status: TaskStatus }) => patchTask(task.id, { status }),
    onMutate: ({ task, status }) => {
      upsertTasks(qc, id, [{ ...task, status }]);
      return { previous: task };
    },
    onSuccess: (t) => {
      upsertTasks(qc, id, [t]);
      setMoveNews(`${t.title}: moved to ${STATUS_LABELS[t.status]}.`);
    },
    onError: (_err, _vars, ctx) => {
      if (ctx) upsertTasks(qc, id, [ctx.previous]);
    },
  });
  // a card moved with its status select (the keyboard way) is re-rendered in another column: focus goes to its
  // select there, not to <body>
  const [focusMoved, setFocusMoved] = useState<{ taskId: string; status: TaskStatus } | null>(null);
  const onMove = useCallback((task: Task, status: TaskStatus, follow?: boolean) => {
    if (task.status === status) return;
    if (follow) setFocusMoved({ taskId: task.id, status });
    move.mutate({ task, status }, { onError: () => setFocusMoved(null) });
  }, [move.mutate]);
  useEffect(() => {
    if (!focusMoved) return;
    const i = COLUMNS.findIndex((c) => c.statuses.includes(focusMoved.status));
    if (!byColumn[i]?.some((t) => t.id === focusMoved.taskId)) return;
    setFocusMoved(null);
    document.querySelector<HTMLSelectElement>(`[data-column="${COLUMNS[i]?.key}"] [data-task-id="${focusMoved.taskId}"] select.card-status`)?.focus();
  }, [focusMoved, byColumn]);
  const onMoveById = useCallback(
    (taskId: string, status: TaskStatus) => {
      const task = qc.getQueryData<Task[]>(queryKeys.projectTasks(id))?.find((t) => t.id === taskId);
      if (task) onMove(task, status);
    },
    [qc, id, onMove],
  );
  const onSelect = useCallback((taskId: string, on: boolean) => {
    setSelected((prev) => {
      const next = new Set(prev);
      if (on) next.add(taskId);
      else next.delete(taskId);
      return next;
    });
  }, []);
  const save = useMutation({
    mutationFn: (fields: TaskFields) => (editing && editing !== 'new' ? patchTask(editing.id, fields) : createTask(id, fields)),
    // shown in the task dialog, at the Labels field when it is about the labels (a toast sat behind the modal)
    meta: { inlineError: true },
    onSuccess: (t) => {
      upsertTasks(qc, id, [t]);
      if (editing === 'new') writeTaskDraft(id, null);
      else if (editing) writeTaskEdits(editing.id, null);
      setEditing(null);
    },
  });
  const resetSave = save.reset;
  const openTaskDialog = useCallback(
    (task: Task | 'new') => {
      resetSave();
      setEditing(task);
    },
    [resetSave],
  );

  const applyTemplate = useMutation({
    mutationFn: (templateId: string) => api<{ tasks: Task[] }>(`/task-templates/${encodeURIComponent(templateId)}/apply`, { method: 'POST', body: { projectId: id } }),
    meta: { inlineError: true }, // shown in the template dialog
    onSuccess: (r) => {
      upsertTasks(qc, id, r.tasks);
      setTemplateOpen(false);
      showToast('info', `Added ${r.tasks.length} tasks from the template`);
    },
  });
  const bulkMove = useMutation({
    mutationFn: (status: TaskStatus) => bulkUpdateTasks([...selected], { status }),
    onSuccess: (updated) => {
      upsertTasks(qc, id, updated);
      setSelected(new Set());
    },
  });
  const bulkDelete = useMutation({
    mutationFn: () => bulkDeleteTasks([...selected]),
    meta: { inlineError: true }, // shown in the confirmation dialog
    onSuccess: () => {
      removeTasks(qc, id, [...selected]);
      setSelected(new Set());
      setConfirmDelete(false);
    },
  });

  const setFilter = (patch: Partial<BoardFilters>) => {
    const next = { ...filters, ...patch };
    const p = new URLSearchParams();
    if (next.q) p.set('q', next.q);
    if (next.priority) p.set('priority', next.priority);
    if (next.assignee) p.set('assignee', next.assignee);
    if (next.labels.length) p.set('labels', next.labels.join(','));
    setParams(p, { replace: true });
  };
  const filtered = visible.length !== (all?.length ?? 0);
  // the URL says what filters: a priority filtersFrom dropped or respelled is written back as it is applied
  const urlPriority = params.get('priority');
  useEffect(() => {
    if (urlPriority === null || urlPriority === filters.priority) return;
    setParams(
      (p) => {
        const next = new URLSearchParams(p);
        if (filters.priority) next.set('priority', filters.priority);
        else next.delete('priority');
        return next;
      },
      { replace: true },
    );
  }, [urlPriority, filters.priority, setParams]);

  // until the project comes, a neutral title ("Board" was shown, then replaced by the name); the tab's title follows
  const title = project.data?.name ?? (project.isPending ? null : 'Project');
  useDocumentTitle(projectMissing ? 'Project not found' : (title ?? 'Loading project…'));

  if (projectMissing) {
    return <NotFoundPage title="Project not found">There is no project {id}: it may have been deleted, or the address is mistyped.</NotFoundPage>;
  }
  return (
    <section className="board-page">
      <div className="page-head">
        <div>
          <p className="crumbs">
            <Link to="/projects">Projects</Link> /
          </p>
          {title === null ? (
            <h1 className="title-loading" aria-busy="true">
              Loading project…
            </h1>
          ) : (
            <h1>{title}</h1>
          )}
        </div>
        <div className="toolbar">
          <button
            type="button"
            onClick={() => {
              applyTemplate.reset();
              setTemplateOpen(true);
            }}
          >
            Apply template
          </button>
          <button type="button" className="primary" onClick={() => openTaskDialog('new')}>
            New task
          </button>
        </div>
      </div>

      <search className="filters" aria-label="Filters">
        <Field label="Search" inline>
          <input type="search" value={filters.q} onChange={(e) => setFilter({ q: e.target.value })} placeholder="Title or description" />
        </Field>
        <Field label="Priority" inline>
          <select value={filters.priority} onChange={(e) => setFilter({ priority: e.target.value })}>
            <option value="">Any</option>
            {TASK_PRIORITIES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Assignee" inline>
          <select value={filters.assignee} onChange={(e) => setFilter({ assignee: e.target.value })}>
            <option value="">Anyone</option>
            {/* an assignee from the URL whom no task has: still shown as the one that filters */}
            {filters.assignee && !assignees.includes(filters.assignee) ? <option value={filters.assignee}>{filters.assignee} (no tasks)</option> : null}
            {assignees.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </Field>
        <LabelsFilter labels={filters.labels} onChange={(labels) => setFilter({ labels })} />
        {filtered || params.toString() ? (
          <button type="button" onClick={() => setParams(new URLSearchParams(), { replace: true })}>
            Clear filters
          </button>
        ) : null}
        <span className="muted" role="status">
          {all ? `${visible.length} of ${all.length} tasks` : ''}
        </span>
      </search>

      {selected.size ? (
        <section className="bulk-bar" aria-label="Selected tasks">
          <strong>
            {selected.size} selected{hiddenSelected ? ` (${hiddenSelected} hidden by the filters)` : ''}
          </strong>
          <Field label="Move to" inline>
            <select value={bulkStatus} onChange={(e) => setBulkStatus(e.target.value as TaskStatus)}>
              {TASK_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {STATUS_LABELS[s]}
                </option>
              ))}
            </select>
          </Field>
          <button type="button" onClick={() => bulkMove.mutate(bulkStatus)} disabled={bulkMove.isPending}>
            Move
          </button>
          <button
            type="button"
            className="danger"
            onClick={() => {
              bulkDelete.reset();
              setConfirmDelete(true);
            }}
          >
            Delete
          </button>
          <button type="button" onClick={() => setSelected(new Set())}>
            Clear selection
          </button>
        </section>
      ) : null}

      <p className="sr-only" role="status" aria-label="Moves">
        {moveNews}
      </p>
      {tasks.error ? <ErrorMessage error={tasks.error} onRetry={() => void tasks.refetch()} /> : null}
      {project.error && !tasks.error ? <ErrorMessage error={project.error} onRetry={() => void project.refetch()} /> : null}
      {tasks.isPending ? <p className="muted">Loading tasks…</p> : null}
      {all ? <ColumnStrip columns={COLUMNS} counts={COLUMNS.map((_, i) => byColumn[i]?.length ?? 0)} board={boardRef} /> : null}
      {all ? (
        <div className="board" data-testid="board" ref={boardRef}>
          {COLUMNS.map((c, i) => (
            <BoardColumnView
              key={c.key}
              column={c}
              tasks={byColumn[i] ?? []}
              selected={selected}
              onSelect={onSelect}
              onMove={onMove}
              onMoveById={onMoveById}
              onEdit={openTaskDialog}
              // a project with no task yet: its first column says how to add some (five "No tasks" said nothing)
              empty={i === 0 && all.length === 0 ? 'No tasks yet. New task adds one here; Apply template adds a template’s tasks.' : undefined}
            />
          ))}
        </div>
      ) : null}

      <TaskDialog
        task={editing && editing !== 'new' ? editing : undefined}
        projectId={id}
        open={editing !== null}
        busy={save.isPending}
        error={save.error}
        gone={!!all && !!editing && editing !== 'new' && !all.some((t) => t.id === editing.id)}
        onSave={(f) => save.mutate(f)}
        onClose={() => setEditing(null)}
      />
      <TemplateDialog open={templateOpen} busy={applyTemplate.isPending} error={applyTemplate.error} onApply={(t) => applyTemplate.mutate(t)} onClose={() => setTemplateOpen(false)} />
      <ConfirmDialog
        open={confirmDelete}
        title="Delete tasks"
        message={`Delete ${selected.size} selected task${selected.size === 1 ? '' : 's'}${hiddenSelected ? ` (${hiddenSelected} of them hidden by the filters)` : ''}? Their attempts, worktrees and branches go too.`}
        confirmLabel="Delete"
        danger
        busy={bulkDelete.isPending}
        error={bulkDelete.error}
        onConfirm={() => bulkDelete.mutate()}
        onCancel={() => setConfirmDelete(false)}
      />
    </section>
  );
}
