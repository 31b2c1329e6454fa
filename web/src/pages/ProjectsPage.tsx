/**
 * Projects: each with its repository and task stats (live: task events refresh the project's stats), create from
 * a local path or a code-hosting URL, edit, delete after confirmation.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import {
  ApiError,
  type CreateProjectFields,
  createProject,
  type DomainEvent,
  deleteProject,
  editProject,
  eventStreamResume,
  listDirectory,
  type ProjectDetail,
  type ProjectListItem,
  queryKeys,
  useProject,
  useProjects,
  useErrorKept,
  useWebSocketStream,
} from '../api';
import { ConfirmDialog, ErrorMessage, formatCost, ListTable, Name, showToast, useDocumentTitle } from '../components';
import { ProjectDialog } from './projects/ProjectDialog';

/** A 404 of a project's own route: it was deleted (elsewhere, since this list was read). */
const isGone = (err: unknown) => err instanceof ApiError && err.status === 404;

/** The repository's address, its branch and, when it is not ready, its state (a clone on its way, or failed). */
function RepositoryText({ project, detail }: { project: ProjectListItem; detail: ProjectDetail | undefined }) {
  const repo = detail?.repository;
  return (
    <>
      {project.repository.url}
      <div className="muted">
        {project.repository.branch}
        {repo && repo.status !== 'ready' ? ` · ${repo.status}${repo.error ? `: ${repo.error}` : ''}` : ''}
      </div>
    </>
  );
}

function ProjectRow({ project, onEdit, onDelete }: { project: ProjectListItem; onEdit: () => void; onDelete: () => void }) {
  const detail = useProject(project.id);
  const s = detail.data?.stats;
  const stats: [string, string | number][] = [
    ['Tasks', s?.tasks ?? '–'],
    ['In progress', s?.inProgressTasks ?? '–'],
    ['Done', s?.completedTasks ?? '–'],
    ['Failed', s?.failedTasks ?? '–'],
    ['Cost', s ? formatCost(s.totalCost) : '–'],
  ];
  return (
    <tr>
      {/* a name or a path without a space wraps in its column: it widened the table until Edit and Delete were out of view */}
      <td className="long-text">
        <Link to={`/projects/${project.id}`}>
          <Name>{project.name}</Name>
        </Link>
        {project.description ? <div className="muted">{project.description}</div> : null}
        {/* a narrow window (a phone) shows the repository and the stats here, under the name, and hides their columns
            (.wide-only): the five stat columns made the table twice the window's width, scrolled under the buttons */}
        <div className="narrow-only project-summary">
          <div className="mono">
            <RepositoryText project={project} detail={detail.data} />
          </div>
          <ul className="project-stats" aria-label={`Task stats of ${project.name}`}>
            {stats.map(([name, value]) => (
              <li key={name}>
                <span className="muted">{name}</span> {value}
              </li>
            ))}
          </ul>
        </div>
      </td>
      <td className="mono long-text wide-only">
        <RepositoryText project={project} detail={detail.data} />
      </td>
      {stats.map(([name, value]) => (
        <td key={name} className="num wide-only">
          {value}
        </td>
      ))}
      <td>
        <div className="row-actions">
          <button type="button" className="small" aria-label={`Edit ${project.name}`} onClick={onEdit}>
            Edit
          </button>
          <button type="button" className="small" aria-label={`Delete ${project.name}`} onClick={onDelete}>
            Delete
          </button>
        </div>
      </td>
    </tr>
  );
}

/** Task events change a project's stats: refresh that project's detail, at most every 300 ms. */
function useProjectStatsEvents() {
  const qc = useQueryClient();
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  useWebSocketStream<DomainEvent>('/ws/events', {
    ...eventStreamResume<DomainEvent>(),
    onReset: () => void qc.invalidateQueries({ queryKey: queryKeys.projects() }),
    onMessage: (e) => {
      const projectId = e.topics.find((t) => t.startsWith('project:'))?.slice('project:'.length);
      if (!projectId || !e.type.startsWith('task.') || timers.current.has(projectId)) return;
      timers.current.set(
        projectId,
        setTimeout(() => {
          timers.current.delete(projectId);
          void qc.invalidateQueries({ queryKey: queryKeys.project(projectId), exact: true });
        }, 300),
      );
    },
  });
}

/**
 * POST /api/projects; for a local path it calls "not a git repository", a path that does not exist is told apart by
 * the filesystem listing (404 there; its access policy applies, so nothing is learnt outside the allowed roots).
 */
async function createProjectTellingMissing(fields: CreateProjectFields) {
  try {
    return await createProject(fields);
  } catch (err) {
    const url = fields.repository.url;
    if (err instanceof ApiError && err.details?.['repository.url'] === 'is not a git repository' && url.startsWith('/')) {
      const missing = await listDirectory(url).then(
        () => false,
        (e: unknown) => e instanceof ApiError && e.code === 'PATH_NOT_FOUND',
      );
      if (missing) throw new ApiError(err.message, err.status, err.code, { ...err.details, 'repository.url': 'does not exist' });
    }
    throw err;
  }
}

export function ProjectsPage() {
  useDocumentTitle('Projects');
  // its error stays while it is tried again (every 5 s while the service is down): it blinked away at each try
  const projects = useErrorKept(useProjects());
  useProjectStatsEvents();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [dialog, setDialog] = useState<ProjectListItem | 'new' | null>(null);
  const [deleting, setDeleting] = useState<ProjectListItem | null>(null);

  const refresh = () => qc.invalidateQueries({ queryKey: queryKeys.projects() });
  const create = useMutation({
    mutationFn: createProjectTellingMissing,
    // shown in the dialog, at the repository field when it is about the repository
    meta: { inlineError: true },
    onSuccess: (p) => {
      setDialog(null);
      void refresh();
      navigate(`/projects/${p.id}`);
    },
  });
  const dropRow = (p: ProjectListItem) => qc.setQueryData<ProjectListItem[]>(queryKeys.projects(), (old) => old?.filter((x) => x.id !== p.id));
  const edit = useMutation({
    mutationFn: (fields: Parameters<typeof editProject>[1]) => editProject((dialog as ProjectListItem).id, fields),
    // shown in the Edit dialog (a toast sat under its backdrop); a project deleted elsewhere meanwhile says so there
    meta: { inlineError: true },
    onSuccess: () => {
      setDialog(null);
      void refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (p: ProjectListItem) => deleteProject(p.id),
    meta: { inlineError: true }, // shown in the confirmation dialog
    onSuccess: (_r, p) => {
      setDeleting(null);
      dropRow(p);
      showToast('info', `Deleted ${p.name}`);
    },
    // deleted elsewhere meanwhile (another tab, the API): what was asked is done; the row goes and the notice says so
    onError: (err, p) => {
      if (!isGone(err)) return;
      setDeleting(null);
      dropRow(p);
      showToast('info', `${p.name} was already deleted (elsewhere)`);
    },
  });

  return (
    <section>
      <div className="page-head">
        <h1>Projects</h1>
        <div className="toolbar">
          <button
            type="button"
            className="primary"
            onClick={() => {
              create.reset();
              setDialog('new');
            }}
          >
            New project
          </button>
        </div>
      </div>
      {projects.error ? <ErrorMessage error={projects.error} onRetry={() => void projects.refetch()} /> : null}
      {projects.isPending ? <p className="muted">Loading projects…</p> : null}
      <ListTable
        label="Projects"
        items={projects.data}
        empty="No projects yet. Create one from a local git repository or a repository URL."
        columns={['Project', 'Repository', 'Tasks', 'In progress', 'Done', 'Failed', 'Cost']}
        numeric={['Tasks', 'In progress', 'Done', 'Failed', 'Cost']}
        wide={['Repository', 'Tasks', 'In progress', 'Done', 'Failed', 'Cost']}
        actions
        row={(p) => (
          <ProjectRow
            key={p.id}
            project={p}
            onEdit={() => {
              edit.reset();
              setDialog(p);
            }}
            onDelete={() => {
              remove.reset();
              setDeleting(p);
            }}
          />
        )}
      />
      <ProjectDialog
        open={dialog !== null}
        project={dialog && dialog !== 'new' ? dialog : undefined}
        busy={create.isPending || edit.isPending}
        error={dialog === 'new' ? create.error : edit.error}
        onCreate={(f) => create.mutate(f)}
        onEdit={(f) => edit.mutate(f)}
        onClose={() => {
          // an edit refused because the project is gone: its row goes with the dialog
          if (dialog && dialog !== 'new' && isGone(edit.error)) dropRow(dialog);
          setDialog(null);
        }}
      />
      <ConfirmDialog
        open={deleting !== null}
        title="Delete project"
        message={`Delete ${deleting?.name ?? ''} with all its tasks and attempts? Its repository on disk is not touched.`}
        confirmLabel="Delete project"
        danger
        busy={remove.isPending}
        error={isGone(remove.error) ? null : remove.error}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onCancel={() => setDeleting(null)}
      />
    </section>
  );
}
