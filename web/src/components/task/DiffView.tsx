/**
 * The diff of an attempt: a file tree beside the files' hunks (react-diff-view), unified or split. Live while the
 * attempt runs: the SSE stream `/api/events/task-attempts/:id/diff` sends an event each time the diff changes (and
 * `end` once the attempt finished); each change refetches the unified text. A follow-up runs the attempt again: the
 * stream is reopened for each run. Loaded on first use (its own chunk).
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Diff, type FileData, Hunk, parseDiff } from 'react-diff-view';
import 'react-diff-view/style/index.css';
import { api, queryKeys, useSseStream } from '../../api';
import { ErrorMessage } from '../ErrorMessage';
import type { DiffSummary, UnifiedDiff } from './taskTypes';

const filePath = (f: FileData) => (f.type === 'delete' ? f.oldPath : f.newPath);

interface TreeNode {
  name: string;
  path: string;
  children: Map<string, TreeNode>;
  file?: FileData;
}

function buildTree(files: FileData[]): TreeNode {
  const root: TreeNode = { name: '', path: '', children: new Map() };
  for (const f of files) {
    const parts = filePath(f).split('/');
    let node = root;
    parts.forEach((part, i) => {
      const path = parts.slice(0, i + 1).join('/');
      let child = node.children.get(part);
      if (!child) {
        child = { name: part, path, children: new Map() };
        node.children.set(part, child);
      }
      node = child;
    });
    node.file = f;
  }
  return root;
}

function counts(f: FileData): { add: number; del: number } {
  let add = 0;
  let del = 0;
  for (const h of f.hunks) for (const c of h.changes) c.type === 'insert' ? add++ : c.type === 'delete' ? del++ : 0;
  return { add, del };
}

function TreeList({ node, selected, onSelect }: { node: TreeNode; selected: string | null; onSelect: (path: string) => void }) {
  const children = [...node.children.values()].sort((a, b) => Number(!!a.file) - Number(!!b.file) || a.name.localeCompare(b.name));
  return (
    <ul>
      {children.map((c) =>
        c.file ? (
          <li key={c.path}>
            <button type="button" className={`tree-file${selected === c.path ? ' selected' : ''}`} aria-pressed={selected === c.path} onClick={() => onSelect(c.path)}>
              <span className={`file-type file-${c.file.type}`}>{c.file.type[0]?.toUpperCase()}</span> {c.name}
            </button>
          </li>
        ) : (
          <li key={c.path}>
            <span className="tree-dir">{c.name}/</span>
            <TreeList node={c} selected={selected} onSelect={onSelect} />
          </li>
        ),
      )}
    </ul>
  );
}

/**
 * The diff's SSE stream of one run of the attempt: the server ends it once the attempt is finished, so a follow-up
 * (which runs the attempt again) needs a new one; DiffView mounts this with a key that changes with each run.
 */
function DiffStream({ attemptId, onUnavailable, onEnd }: { attemptId: string; onUnavailable: (message: string | null) => void; onEnd?: () => void }) {
  const qc = useQueryClient();
  const key = queryKeys.attemptDiff(attemptId);
  const seen = useRef(false);
  useSseStream(`/api/events/task-attempts/${attemptId}/diff`, {
    onEvent: (event, data) => {
      if (event === 'unavailable') onUnavailable((data as { message?: string }).message ?? 'The worktree host is unavailable');
      if (event === 'diff') {
        onUnavailable(null);
        const summary = (data as { summary: DiffSummary }).summary;
        const had = qc.getQueryData<UnifiedDiff>(key)?.summary;
        // the first event is the diff the GET just read, unless it changed in between
        const same = had && had.filesChanged === summary.filesChanged && had.additions === summary.additions && had.deletions === summary.deletions;
        if (seen.current || !same) void qc.invalidateQueries({ queryKey: key });
        seen.current = true;
      }
      if (event === 'end') onEnd?.();
    },
  });
  return null;
}

/**
 * `runKey` names the attempt's current run and status (a follow-up starts a new run of a finished attempt): when it
 * changes, the diff is read again and its stream reopened, so the diff follows every run, not just the first.
 */
export function DiffView({ attemptId, runKey = '', running = false, onEnd }: { attemptId: string; runKey?: string; running?: boolean; onEnd?: () => void }) {
  const qc = useQueryClient();
  const key = queryKeys.attemptDiff(attemptId);
  const diff = useQuery({
    queryKey: key,
    queryFn: ({ signal }) => api<UnifiedDiff>(`/attempts/${attemptId}/diff`, { query: { format: 'unified' }, signal }),
    meta: { inlineError: true },
  });
  const [unavailable, setUnavailable] = useState<string | null>(null);
  const shownRun = useRef(runKey);
  useEffect(() => {
    if (shownRun.current === runKey) return;
    shownRun.current = runKey;
    void qc.invalidateQueries({ queryKey: queryKeys.attemptDiff(attemptId) });
  }, [qc, attemptId, runKey]);

  // parseDiff('') gives one file with no name and no hunks: an attempt with no changes has no file
  const files = useMemo(() => (diff.data?.diff.trim() ? parseDiff(diff.data.diff, { nearbySequences: 'zip' }).filter((f) => filePath(f)) : []), [diff.data]);
  const tree = useMemo(() => buildTree(files), [files]);
  const [viewType, setViewType] = useState<'unified' | 'split'>('unified');
  const [selected, setSelected] = useState<string | null>(null);
  const shown = selected ? files.filter((f) => filePath(f) === selected) : files;

  return (
    <div className="diff-view">
      <DiffStream key={runKey} attemptId={attemptId} onUnavailable={setUnavailable} onEnd={onEnd} />
      <div className="diff-toolbar">
        {diff.data ? (
          <span>
            {diff.data.summary.filesChanged} {diff.data.summary.filesChanged === 1 ? 'file' : 'files'} changed, <span className="add">+{diff.data.summary.additions}</span> <span className="del">−{diff.data.summary.deletions}</span>
          </span>
        ) : null}
        <fieldset className="segmented">
          <legend className="visually-hidden">Diff view</legend>
          <label>
            <input type="radio" name={`view-${attemptId}`} checked={viewType === 'unified'} onChange={() => setViewType('unified')} /> Unified
          </label>
          <label>
            <input type="radio" name={`view-${attemptId}`} checked={viewType === 'split'} onChange={() => setViewType('split')} /> Split
          </label>
        </fieldset>
        {selected ? (
          <button type="button" onClick={() => setSelected(null)}>
            Show all files
          </button>
        ) : null}
      </div>
      {unavailable ? (
        <div className="banner banner-warning" role="status">
          {unavailable}
        </div>
      ) : null}
      {diff.error ? <ErrorMessage error={diff.error} onRetry={() => void diff.refetch()} /> : null}
      {diff.data && files.length === 0 ? <p className="muted">{running ? 'No changes yet.' : 'No changes.'}</p> : null}
      {files.length ? (
        <div className="diff-body">
          <nav className="file-tree" aria-label="Changed files">
            <TreeList node={tree} selected={selected} onSelect={(p) => setSelected(p === selected ? null : p)} />
          </nav>
          <div className="diff-files">
            {shown.map((f) => {
              const c = counts(f);
              return (
                <section key={`${f.oldRevision}-${f.newRevision}-${filePath(f)}`} className="diff-file" aria-label={filePath(f)}>
                  <header className="diff-file-header">
                    <strong>{filePath(f)}</strong>
                    {f.type === 'rename' ? <span className="muted"> (from {f.oldPath})</span> : null}
                    <span className="add"> +{c.add}</span> <span className="del">−{c.del}</span>
                  </header>
                  {f.isBinary || !f.hunks.length ? (
                    <p className="muted">{f.isBinary ? 'Binary file' : 'No text changes'}</p>
                  ) : (
                    <Diff viewType={viewType} diffType={f.type} hunks={f.hunks}>
                      {(hunks) => hunks.map((h) => <Hunk key={h.content} hunk={h} />)}
                    </Diff>
                  )}
                </section>
              );
            })}
          </div>
        </div>
      ) : null}
    </div>
  );
}
