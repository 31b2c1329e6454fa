import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError, findGitRepos, listDirectory, listFilesystemRoots } from '../../api';
import { ErrorMessage, Field } from '../../components';

function parentOf(p: string): string {
  const trimmed = p.replace(/\/+$/, '');
  const i = trimmed.lastIndexOf('/');
  return i <= 0 ? '/' : trimmed.slice(0, i);
}

/**
 * The local repository picker: browse directories (GET /api/filesystem/list, repositories marked) or search one
 * for git repositories (GET /api/filesystem/git-repos); choosing one fills the path. It starts at `~`, or at the first
 * allowed root when the home directory is outside them (GET /api/filesystem/roots, listed as buttons below).
 */
export function PathPicker({
  value,
  onChange,
  onSettle,
  error,
}: {
  value: string;
  onChange: (path: string) => void;
  onSettle?: (path: string) => void;
  /** what is wrong with the path (shown at the field) */
  error?: string | null;
}) {
  // a path chosen from a list, or the field left: the dialog looks up what it needs of that repository (its branch)
  const pick = (p: string) => {
    onChange(p);
    onSettle?.(p);
  };
  const [dir, setDir] = useState('~');
  // Directory shows what the user typed, else the text it showed when it got the focus (so a listing that arrives
  // while it is being edited, like the first one resolving `~`, cannot change the text under the cursor), else the
  // listed directory
  const [typed, setTyped] = useState<string | null>(null);
  const [frozen, setFrozen] = useState<string | null>(null);
  const [searchIn, setSearchIn] = useState<string | null>(null);
  const listing = useQuery({ queryKey: ['filesystem', 'list', dir], queryFn: ({ signal }) => listDirectory(dir, signal), meta: { inlineError: true } });
  const roots = useQuery({ queryKey: ['filesystem', 'roots'], queryFn: ({ signal }) => listFilesystemRoots(signal), meta: { inlineError: true } });
  // the home directory is not an allowed one: start at the first root instead of showing "Access denied"
  const homeDenied = dir === '~' && listing.error instanceof ApiError && listing.error.code === 'ACCESS_DENIED';
  const firstRoot = roots.data?.roots[0];
  useEffect(() => {
    if (homeDenied && firstRoot) setDir(firstRoot);
  }, [homeDenied, firstRoot]);
  const repos = useQuery({
    queryKey: ['filesystem', 'git-repos', searchIn],
    queryFn: ({ signal }) => findGitRepos(searchIn as string, signal),
    enabled: searchIn !== null,
    meta: { inlineError: true },
  });
  const here = listing.data?.path ?? dir;
  const go = (to: string | undefined) => {
    if (to) setDir(to);
    setTyped(null);
    setFrozen(null);
  };
  const open = () => go(typed?.trim());
  return (
    <div>
      <Field label="Repository path" error={error}>
        <input required value={value} onChange={(e) => onChange(e.target.value)} onBlur={(e) => onSettle?.(e.target.value)} placeholder="/home/me/code/app" className="mono" />
      </Field>
      <div className="browser-path">
        <button type="button" onClick={() => go(parentOf(here))} aria-label="Parent directory">
          ↑ Up
        </button>
        <Field label="Directory" inline grow>
          <input
            className="mono"
            value={typed ?? frozen ?? here}
            onFocus={() => setFrozen(here)}
            onBlur={() => setFrozen(null)}
            onChange={(e) => setTyped(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault();
                open();
              }
            }}
          />
        </Field>
        <button type="button" onClick={open}>
          Open
        </button>
        <button type="button" onClick={() => setSearchIn(here)}>
          Find git repositories here
        </button>
      </div>
      {listing.error && !(homeDenied && (roots.isPending || firstRoot)) ? <ErrorMessage error={listing.error} /> : null}
      {roots.data?.roots.length ? (
        <div className="browser-roots">
          <span className="muted">Allowed directories:</span>
          <ul className="browser-roots-list" aria-label="Allowed directories">
            {roots.data.roots.map((r) => (
              <li key={r}>
                <button type="button" className="small mono" aria-pressed={here === r} onClick={() => go(r)}>
                  {r}
                </button>
              </li>
            ))}
          </ul>
        </div>
      ) : roots.data ? (
        <p className="muted">No allowed directory exists on this host: set filesystem.allowedPaths in the configuration.</p>
      ) : null}
      {roots.error ? <ErrorMessage error={roots.error} /> : null}
      <section className="browser" aria-label="Directories">
        {listing.isPending ? (
          <p className="muted" role="status">
            Reading {dir}…
          </p>
        ) : null}
        {listing.data && !listing.data.entries.some((e) => e.type === 'directory') ? <p className="muted empty">No sub-directories in {here}</p> : null}
        <ul className="browser-list">
          {(listing.data?.entries ?? [])
            .filter((e) => e.type === 'directory')
            .map((e) => (
              <li key={e.path}>
                <button type="button" onClick={() => (e.isGitRepo ? pick(e.path) : setDir(e.path))}>
                  {e.isGitRepo ? '⎇ ' : '📁 '}
                  {e.name}
                  {e.isGitRepo ? <span className="muted"> — git repository (choose)</span> : null}
                </button>
              </li>
            ))}
        </ul>
      </section>
      {searchIn !== null ? (
        <section className="browser" aria-label="Git repositories found">
          {repos.isPending ? <p className="muted">Searching {searchIn}…</p> : null}
          {repos.error ? <ErrorMessage error={repos.error} /> : null}
          {repos.data && repos.data.repositories.length === 0 ? <p className="muted">No git repository under {searchIn}.</p> : null}
          <ul className="browser-list">
            {(repos.data?.repositories ?? []).map((r) => (
              <li key={r.path}>
                <button type="button" onClick={() => pick(r.path)}>
                  ⎇ {r.name} <span className="muted mono">{r.path}</span> <span className="badge">{r.branch}</span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </div>
  );
}
