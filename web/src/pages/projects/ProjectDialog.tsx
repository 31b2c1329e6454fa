import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError, type CreateProjectFields, currentBranchOf, type EditProjectFields, listFilesystemRoots, type ProjectListItem, useProject } from '../../api';
import { Dialog, ErrorMessage, Field } from '../../components';
import { PathPicker } from './PathPicker';

export interface ProjectDialogProps {
  open: boolean;
  /** the project to edit; undefined = a new one */
  project?: ProjectListItem;
  busy: boolean;
  /** the failed create or edit, shown in the dialog (a create's at the repository field when the API names `repository.url`) */
  error?: unknown;
  onCreate: (fields: CreateProjectFields) => void;
  onEdit: (fields: EditProjectFields) => void;
  onClose: () => void;
}

/** New project (from a local path, with the filesystem browser, or a code-hosting URL) or edit one. */
export function ProjectDialog(props: ProjectDialogProps) {
  return (
    <Dialog open={props.open} title={props.project ? 'Edit project' : 'New project'} onClose={props.onClose} className="dialog-wide">
      {props.open ? props.project ? <EditForm {...props} project={props.project} /> : <CreateForm {...props} /> : null}
    </Dialog>
  );
}

/** What the API said of `repository.url`, in the field's words ("Repository path: /x does not exist"). */
function repositoryError(error: unknown, label: string, location: string): string | null {
  const said = error instanceof ApiError ? error.details?.['repository.url'] : undefined;
  return typeof said === 'string' ? `${label}: ${location} ${said}` : null;
}

/** What the repository field says to Create with nothing in it (before, Create project was only disabled: Enter said nothing). */
const NO_REPOSITORY = { local: 'Choose a repository: type its path, or pick it in the directories below.', url: 'Type the repository URL to clone.' } as const;

function CreateForm({ busy, error, onCreate, onClose }: ProjectDialogProps) {
  const [source, setSource] = useState<'local' | 'url'>('local');
  const [path, setPath] = useState('');
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  // the branch typed, else (a local repository) the one it is on: the API's default `main` is wrong for a repository on
  // `master`, so the field shows the repository's current branch once the path is chosen or left
  const [branch, setBranch] = useState<string | null>(null);
  const [settled, setSettled] = useState('');
  const [description, setDescription] = useState('');
  const location = source === 'local' ? path.trim() : url.trim();
  const suggested = location.replace(/\.git$/, '').split(/[/:]/).filter(Boolean).pop() ?? '';
  // the lookup can only read inside the allowed directories (elsewhere it is a 403): a repository outside them gets
  // the API's default, which the field's placeholder then says
  const roots = useQuery({ queryKey: ['filesystem', 'roots'], queryFn: ({ signal }) => listFilesystemRoots(signal), meta: { inlineError: true } });
  const readable = (p: string) => p.startsWith('/') && (roots.data?.roots ?? []).some((r) => p === r || p.startsWith(r.endsWith('/') ? r : `${r}/`));
  const current = useQuery({
    queryKey: ['filesystem', 'current-branch', settled],
    queryFn: ({ signal }) => currentBranchOf(settled, signal),
    enabled: source === 'local' && readable(settled),
    // a path that is no repository (or outside the allowed roots) says so when the project is created
    retry: false,
    meta: { inlineError: true },
  });
  const detected = source === 'local' && settled === location ? (current.data ?? null) : null;
  // the location the failed create was about (the field may have been edited since: then the message goes)
  const [sent, setSent] = useState('');
  // set by a Create tried with no repository; the message stays until one is given
  const [triedEmpty, setTriedEmpty] = useState(false);
  const fieldError =
    triedEmpty && !location ? NO_REPOSITORY[source] : sent === location ? repositoryError(error, source === 'local' ? 'Repository path' : 'Repository URL', location) : null;
  return (
    <form
      // no repository is named at its field in the board's words, rather than by the browser's own bubble (`required`)
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        const finalName = name.trim() || suggested;
        if (!location) {
          setTriedEmpty(true);
          return;
        }
        if (!finalName) return;
        let chosen = (branch ?? '').trim() || detected;
        // submitted before the lookup of a typed path was done: ask now, rather than let the API default to main
        if (!chosen && source === 'local' && branch === null && readable(location)) chosen = await currentBranchOf(location).catch(() => null);
        setSent(location);
        onCreate({ name: finalName, description: description || undefined, repository: { url: location, branch: chosen || undefined } });
      }}
    >
      <fieldset className="tabs">
        <legend className="sr-only">Repository source</legend>
        <button type="button" aria-pressed={source === 'local'} onClick={() => setSource('local')}>
          Local path
        </button>
        <button type="button" aria-pressed={source === 'url'} onClick={() => setSource('url')}>
          Code-hosting URL
        </button>
      </fieldset>
      {source === 'local' ? (
        <PathPicker value={path} onChange={setPath} onSettle={(p) => setSettled(p.trim())} error={fieldError} />
      ) : (
        <Field label="Repository URL" error={fieldError}>
          <input required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://github.com/org/repo.git" className="mono" />
        </Field>
      )}
      <div className="field-row">
        <Field label="Name">
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder={suggested || 'my-project'} maxLength={200} />
        </Field>
        <Field label="Branch">
          <input value={branch ?? detected ?? ''} onChange={(e) => setBranch(e.target.value)} placeholder={source === 'local' && (!location || readable(location)) ? "the repository's current branch" : 'main'} />
        </Field>
      </div>
      <Field label="Description">
        <textarea value={description} onChange={(e) => setDescription(e.target.value)} />
      </Field>
      {error && !repositoryError(error, '', '') ? <ErrorMessage error={error} action /> : null}
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={busy}>
          Create project
        </button>
      </div>
    </form>
  );
}

/** What the Edit dialog says when the project was deleted elsewhere while it was open (the PATCH answered 404). */
const EDITED_GONE = 'This project was deleted elsewhere, so there is nothing to save. Cancel closes this dialog and removes it from the list.';

function EditForm({ project, busy, error, onEdit, onClose }: ProjectDialogProps & { project: ProjectListItem }) {
  const gone = error instanceof ApiError && error.status === 404;
  const [name, setName] = useState(project.name);
  const [description, setDescription] = useState(project.description);
  const [defaultLLM, setDefaultLLM] = useState(project.defaultLLM ?? '');
  // the profiles the configuration defines (the Start dialog offers the same); a current one it lacks stays listed
  const detail = useProject(project.id);
  const profiles = Object.keys(detail.data?.config.llms ?? {}).sort();
  const [setup, setSetup] = useState(project.setup_script);
  const [dev, setDev] = useState(project.dev_script);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (!name.trim()) return;
        onEdit({ name: name.trim(), description, defaultLLM: defaultLLM.trim() || null, setup_script: setup, dev_script: dev });
      }}
    >
      <Field label="Name">
        <input required value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
      </Field>
      <Field label="Description">
        <textarea value={description} onChange={(e) => setDescription(e.target.value)} />
      </Field>
      <Field label="Default agent profile">
        <select value={defaultLLM} onChange={(e) => setDefaultLLM(e.target.value)}>
          <option value="">None</option>
          {defaultLLM && !profiles.includes(defaultLLM) ? (
            <option value={defaultLLM}>
              {defaultLLM}
              {detail.data ? ' (not configured)' : ''}
            </option>
          ) : null}
          {profiles.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </Field>
      <div className="field-row">
        <Field label="Setup script">
          <textarea className="mono" value={setup} onChange={(e) => setSetup(e.target.value)} />
        </Field>
        <Field label="Dev script">
          <textarea className="mono" value={dev} onChange={(e) => setDev(e.target.value)} />
        </Field>
      </div>
      {error ? <ErrorMessage error={gone ? EDITED_GONE : error} action /> : null}
      <div className="dialog-actions">
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={busy || gone || !name.trim()}>
          Save
        </button>
      </div>
    </form>
  );
}
