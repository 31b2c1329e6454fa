/**
 * Live diffs of attempts (SSE /api/events/task-attempts/:id/diff): ONE reader per attempt per API process, shared
 * by all its viewers. Each second it takes a cheap fingerprint of the worktree (HEAD, `git status`, sizes and
 * mtimes: lib/attempts/gitDiff.ts) — on the worktree's host through hostReadWorkflow when it is elsewhere — and
 * reads, parses, serialises and hashes the diff (on the warm CPU pool) only when the fingerprint changed. Viewers
 * get the latest state; a slow viewer skips intermediate diffs rather than holding up the others.
 */
import { getAttempt, TERMINAL_ATTEMPT_STATUSES, type AttemptRow } from '../../lib/db/attempts';
import { getProject } from '../../lib/db/projects';
import { getTask } from '../../lib/db/tasks';
import type { CpuPool } from '../../lib/attempts/cpuPool';
import type { DiffEventBody } from '../../lib/attempts/diffEvent';
import { diffText, readAttemptWorktree } from '../../lib/attempts/hostReads';
import type { DiffSource } from '../../lib/attempts/gitDiff';
import { isAppError } from '../../lib/errors';
import { counter } from '../../lib/metrics';
import type { TaskAppDeps } from './deps';

export type DiffFeedEvent =
  | { type: 'diff'; status: AttemptRow['status']; body: DiffEventBody }
  | { type: 'unavailable'; message: string }
  /** the diff could not be read (logged); the stream ends after it */
  | { type: 'error'; code: string; message: string }
  | { type: 'end' };

export interface DiffFeeds {
  /** Calls `viewer` with the attempt's current diff (at once when known) and every change, then `end`. Returns unwatch. */
  watch(attemptId: string, viewer: (e: DiffFeedEvent) => void): () => void;
  close(): void;
}

interface Feed {
  viewers: Set<(e: DiffFeedEvent) => void>;
  current?: DiffFeedEvent;
  fingerprint?: string;
}

export function createDiffFeeds(deps: TaskAppDeps, cpu: CpuPool, intervalMs = 1000): DiffFeeds {
  const feeds = new Map<string, Feed>();
  let closed = false;
  const reads = counter(deps.metrics.registry, 'armada_live_diff_reads_total', 'Diff reads of live diff streams (one per attempt and worktree change, shared by all viewers)', ['kind']);
  const emit = (f: Feed, e: DiffFeedEvent) => {
    if (e.type !== 'end') f.current = e;
    for (const v of f.viewers) v(e);
  };

  /** One look at the attempt; true when the feed has ended. */
  const tick = async (attemptId: string, f: Feed): Promise<boolean> => {
    const a = await getAttempt(deps.db, attemptId);
    if (!a) return true;
    const task = await getTask(deps.db, a.task_id);
    const project = task ? await getProject(deps.db, task.project_id) : undefined;
    const worktreePath = a.cleaned_up ? null : a.worktree_path;
    const source: DiffSource = { worktreePath, repoPath: project?.git_repo_path ?? null, baseCommit: a.base_commit, branch: a.branch };
    const at = { worktreePath, hostQueue: a.host_queue };
    try {
      const fp = await readAttemptWorktree(deps, at, { op: 'fingerprint', source });
      reads.inc({ kind: 'fingerprint' });
      // a worker of an older version answers another op: no fingerprint, so read every time
      const fingerprint = fp.op === 'fingerprint' ? `${worktreePath ?? ''}\0${fp.fingerprint}` : undefined;
      if (fingerprint === undefined || fingerprint !== f.fingerprint || f.current?.type !== 'diff') {
        const read = await readAttemptWorktree(deps, at, { op: 'diff', source });
        reads.inc({ kind: 'diff' });
        const body = await cpu.diffEvent(diffText(read));
        f.fingerprint = fingerprint;
        if (f.current?.type !== 'diff' || f.current.body.hash !== body.hash || f.current.status !== a.status) emit(f, { type: 'diff', status: a.status, body });
      }
    } catch (err) {
      if (!isAppError(err) || err.code !== 'HOST_UNAVAILABLE') throw err;
      // the worktree's host has no worker right now: say so, keep trying
      f.fingerprint = undefined;
      if (f.current?.type !== 'unavailable') emit(f, { type: 'unavailable', message: err.message });
      return false;
    }
    return TERMINAL_ATTEMPT_STATUSES.includes(a.status);
  };

  const run = async (attemptId: string, f: Feed) => {
    try {
      while (!closed && f.viewers.size) {
        if (await tick(attemptId, f)) break;
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    } catch (err) {
      deps.logger.error({ err, attemptId }, 'live diff read failed');
      // the viewers are told, not left with a stream that just ends (an internal error's text stays in the log)
      const said = isAppError(err) ? { code: err.code, message: err.message } : { code: 'INTERNAL_ERROR', message: 'The diff could not be read' };
      emit(f, { type: 'error', ...said });
    } finally {
      if (feeds.get(attemptId) === f) feeds.delete(attemptId);
      emit(f, { type: 'end' });
    }
  };

  return {
    watch(attemptId, viewer) {
      let f = feeds.get(attemptId);
      if (!f) {
        f = { viewers: new Set() };
        feeds.set(attemptId, f);
        f.viewers.add(viewer);
        void run(attemptId, f);
      } else {
        f.viewers.add(viewer);
        if (f.current) viewer(f.current);
      }
      const feed = f;
      return () => {
        feed.viewers.delete(viewer);
      };
    },
    close() {
      closed = true;
    },
  };
}
