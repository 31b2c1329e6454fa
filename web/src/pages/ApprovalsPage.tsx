/**
 * Approvals inbox of the acting user: pending requests with a countdown to expiry, approve or reject with a comment,
 * and the history of closed requests (GET /api/approvals/history). Each request links to its task, by the task's title.
 * Live: /ws/events carries every approval.* event, so a decision made elsewhere removes the request and shows it
 * resolved within a second, and a listed task's rename (task.updated) reads the list again; nothing polls.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { type Approval, fetchApprovalHistory, getApproval, respondToApproval, usePendingApprovals } from '../api/approvals';
import { eventStreamResume, queryKeys, useErrorKept, useWebSocketStream } from '../api';
import type { DomainEvent } from '../api/tasks';
import { Dialog, ErrorMessage, ListTable, NotLoaded, type RowFact, RowFacts, ScreenErrors, showToast, useDocumentTitle } from '../components';

type Decision = 'approved' | 'rejected';

function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    // a display clock for the countdowns, not a request loop
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}

export function countdown(expiresAt: string | null, now: number): string {
  if (!expiresAt) return 'no expiry';
  const ms = Date.parse(expiresAt) - now;
  if (ms <= 0) return 'expiring…';
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h left`;
  if (h > 0) return `${h}h ${m}m left`;
  return `${m}m ${String(s % 60).padStart(2, '0')}s left`;
}

const HISTORY_KEY = queryKeys.approvals('history');

function addToHistory(qc: ReturnType<typeof useQueryClient>, a: Approval) {
  qc.setQueryData<Approval[]>(HISTORY_KEY, (old = []) => [a, ...old.filter((x) => x.id !== a.id)].slice(0, 50));
}

function useApprovalEvents() {
  const qc = useQueryClient();
  useWebSocketStream<DomainEvent>('/ws/events', {
    ...eventStreamResume<DomainEvent>(),
    onReconnect: () => void qc.invalidateQueries({ queryKey: ['approvals'] }),
    onReset: () => void qc.invalidateQueries({ queryKey: ['approvals'] }),
    onMessage: (e) => {
      // a task renamed elsewhere: the lists that show it read again, for its title
      if (e.type === 'task.updated' && (e.data.fields as string[] | undefined)?.includes('title')) {
        for (const key of [queryKeys.approvals('pending'), HISTORY_KEY]) {
          if (qc.getQueryData<Approval[]>(key)?.some((a) => a.taskId === e.data.taskId)) void qc.invalidateQueries({ queryKey: key });
        }
        return;
      }
      if (!e.type.startsWith('approval.')) return;
      const id = (e.data.approvalId ?? e.data.id) as string | undefined;
      const final = e.type !== 'approval.created' && e.type !== 'approval.responded';
      if (id && final) {
        const mine = qc.getQueryData<Approval[]>(queryKeys.approvals('pending'))?.some((a) => a.id === id);
        if (mine) {
          // off the pending list at once, then into the history with its final state
          qc.setQueryData<Approval[]>(queryKeys.approvals('pending'), (old) => old?.filter((a) => a.id !== id));
          getApproval(id).then(
            (a) => {
              if (a.status !== 'pending') addToHistory(qc, a);
            },
            () => undefined,
          );
        } else {
          // maybe one this user requested or answered: the server knows whose history it belongs to
          void qc.invalidateQueries({ queryKey: HISTORY_KEY });
        }
      }
      void qc.invalidateQueries({ queryKey: queryKeys.approvals('pending') });
    },
  });
}

function RespondDialog({ approval, decision, onClose }: { approval: Approval; decision: Decision; onClose: () => void }) {
  const qc = useQueryClient();
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const verb = decision === 'approved' ? 'Approve' : 'Reject';
  return (
    <Dialog open title={`${verb} “${approval.title}”`} onClose={onClose}>
      <form
        onSubmit={async (ev) => {
          ev.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const r = await respondToApproval(approval.id, decision, comment.trim());
            showToast('info', `${verb}d: ${approval.title} (${r.approvalStatus})`);
            qc.setQueryData<Approval[]>(queryKeys.approvals('pending'), (old) => old?.filter((a) => a.id !== approval.id));
            addToHistory(qc, await getApproval(approval.id));
            onClose();
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label className="field">
          <span>Comment</span>
          <input data-autofocus value={comment} onChange={(e) => setComment(e.target.value)} maxLength={10_000} placeholder="optional" />
        </label>
        {error ? <ErrorMessage error={error} action /> : null}
        <div className="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className={decision === 'approved' ? 'primary' : 'danger'} disabled={busy}>
            {verb}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** The task a request is about, linked to its screen (the list named the request only, with no way to its task). */
function TaskLink({ approval }: { approval: Approval }) {
  return (
    <div>
      <span className="muted">Task: </span>
      <Link to={`/tasks/${encodeURIComponent(approval.taskId)}`}>{approval.taskTitle}</Link>
    </div>
  );
}

const decided = (a: Approval) => (a.decidedAt ? new Date(a.decidedAt).toLocaleString() : '—');

/** A closed request's answers, each with its comment, and why it closed when it was not by the answers. */
function Responses({ approval }: { approval: Approval }) {
  return (
    <>
      {approval.closedReason ? <div className="muted">{approval.closedReason}</div> : null}
      {approval.responses.map((r) => (
        <div key={`${r.approver}-${r.respondedAt}`}>
          {r.approver}: {r.decision}
          {r.comment ? ` — “${r.comment}”` : ''}
        </div>
      ))}
    </>
  );
}

function StatusBadge({ status }: { status: string }) {
  return <span className={`badge approval-${status}`}>{status}</span>;
}

export function ApprovalsPage() {
  useDocumentTitle('Approvals');
  useApprovalEvents();
  const now = useNow();
  // errors stay while they are tried again (every 5 s while the service is down): they blinked away at each try
  const pending = useErrorKept(usePendingApprovals());
  // loaded once, then kept current by the stream and by answers given here
  const historyQuery = useErrorKept(useQuery({ queryKey: HISTORY_KEY, queryFn: ({ signal }) => fetchApprovalHistory(signal), meta: { inlineError: true } }));
  const history = historyQuery.data ?? [];
  const [acting, setActing] = useState<{ approval: Approval; decision: Decision } | null>(null);

  return (
    <section>
      <div className="page-head">
        <h1>Approvals</h1>
      </div>
      {/* the task service down is one error for both lists (each said it) */}
      <ScreenErrors
        reads={[
          { name: 'Pending for you', error: pending.error },
          { name: 'History', error: historyQuery.error },
        ]}
        onRetry={() => {
          void pending.refetch();
          void historyQuery.refetch();
        }}
      />
      <h2 className="section-title">Pending for you</h2>
      <NotLoaded error={pending.data ? null : pending.error} />
      {pending.isPending ? <p className="muted">Loading…</p> : null}
      <ListTable
        label="Pending approvals"
        items={pending.data}
        empty="Nothing waits for your answer."
        columns={['Request', 'Type', 'Requested by', 'Expires', 'Answers']}
        wide={['Type', 'Requested by', 'Expires', 'Answers']}
        actions
        row={(a) => {
          const facts: RowFact[] = [
            { name: 'Type', value: a.type },
            { name: 'Expires', value: countdown(a.expiresAt, now) },
            { name: 'Answers', value: `${a.responses.length}${a.approvers ? ` of ${a.approvers.length}` : ''}` },
            { name: 'Requested by', value: a.createdBy, wraps: true },
          ];
          return (
            <tr key={a.id} data-approval={a.id}>
              <td className="long-text">
                <strong>{a.title}</strong>
                <TaskLink approval={a} />
                {a.description ? (
                  <div className="muted clamp" title={a.description}>
                    {a.description}
                  </div>
                ) : null}
                {/* a narrow box (a phone) shows the other columns here, under the request, and hides them (.wide-only),
                    as Projects does: as columns, Type ran under the pinned Approve and Reject and the rest was past them */}
                <RowFacts label={`About ${a.title}`} facts={facts} />
              </td>
              <td className="wide-only">{a.type}</td>
              <td className="wide-only">{a.createdBy}</td>
              <td className="wide-only" title={a.expiresAt ?? undefined}>
                {countdown(a.expiresAt, now)}
              </td>
              <td className="wide-only">
                {a.responses.length}
                {a.approvers ? ` of ${a.approvers.length}` : ''}
              </td>
              <td className="actions-cell">
                <button type="button" className="primary small" aria-label={`Approve ${a.title}`} onClick={() => setActing({ approval: a, decision: 'approved' })}>
                  Approve
                </button>
                <button type="button" className="danger small" aria-label={`Reject ${a.title}`} onClick={() => setActing({ approval: a, decision: 'rejected' })}>
                  Reject
                </button>
              </td>
            </tr>
          );
        }}
      />

      <h2 className="section-title">History</h2>
      <p className="muted">Closed requests you made, answered or could answer; latest first.</p>
      <NotLoaded error={historyQuery.data ? null : historyQuery.error} />
      {historyQuery.isPending && !historyQuery.error ? <p className="muted">Loading…</p> : null}
      <ListTable
        label="Approval history"
        items={historyQuery.isSuccess || history.length ? history : undefined}
        empty="No closed requests yet: approved, rejected, expired and cancelled ones come here."
        columns={['Request', 'Status', 'Decided', 'Responses']}
        wide={['Status', 'Decided', 'Responses']}
        row={(a) => (
          <tr key={a.id} data-approval={a.id}>
            <td className="long-text">
              {a.title}
              <TaskLink approval={a} />
              {/* a narrow box (a phone): the other columns under the request, as in the pending list */}
              <RowFacts label={`About ${a.title}`} facts={[{ value: <StatusBadge status={a.status} /> }, { name: 'Decided', value: decided(a), wraps: true }]}>
                <Responses approval={a} />
              </RowFacts>
            </td>
            <td className="wide-only">
              <StatusBadge status={a.status} />
            </td>
            <td className="wide-only">{decided(a)}</td>
            <td className="long-text wide-only">
              <Responses approval={a} />
            </td>
          </tr>
        )}
      />
      {acting ? <RespondDialog approval={acting.approval} decision={acting.decision} onClose={() => setActing(null)} /> : null}
    </section>
  );
}
