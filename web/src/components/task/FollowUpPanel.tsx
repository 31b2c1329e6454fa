/**
 * Follow-ups of an attempt: send a prompt now (POST /api/attempts/:id/follow-up), keep it as a draft
 * (POST /api/task-attempts/:id/follow-up-draft), or collect several into a queue that runs them one after the other
 * (POST /api/task-attempts/:id/follow-up-queue, autoExecute). Drafts of the attempt made while the screen is open
 * (here or elsewhere) arrive on the project's drafts stream `/ws/projects/:projectId/drafts`; the API has no route
 * that lists an attempt's earlier drafts.
 */
import { useMutation } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, useWebSocketStream } from '../../api';
import { Field } from '../Field';
import { showToast } from '../toastStore';

interface DraftItem {
  id: string;
  taskAttemptId: string;
  prompt?: string;
  content?: string;
  retryPrompt?: string;
  status?: string;
  type: string;
}

const draftText = (d: DraftItem) => d.prompt ?? d.retryPrompt ?? d.content ?? '';

/**
 * `refusal`: why the attempt takes no follow-up now (cancelled, not started), shown beside Send and describing it; the
 * buttons that send were only off, with no word on why.
 */
export function FollowUpPanel({ attemptId, projectId, refusal }: { attemptId: string; projectId: string; refusal?: string | null }) {
  const disabled = !!refusal;
  const refusalId = useId();
  const [prompt, setPrompt] = useState('');
  const [queue, setQueue] = useState<string[]>([]);
  const [drafts, setDrafts] = useState<DraftItem[]>([]);
  const upsert = (d: DraftItem) => setDrafts((ds) => [d, ...ds.filter((x) => x.id !== d.id)]);
  // A prompt that was sent or saved is cleared only if it is still what the box holds: the draft often arrives on the
  // stream before the POST answers, and what was typed after it must not be wiped by that late answer.
  const clearIfStill = (text: string) => setPrompt((current) => (current === text ? '' : current));

  useWebSocketStream<{ type: string; draft?: DraftItem; draftId?: string }>(`/ws/projects/${projectId}/drafts`, {
    onMessage: (m) => {
      if (m.type === 'draft_deleted' && m.draftId) setDrafts((ds) => ds.filter((d) => d.id !== m.draftId));
      else if (m.draft && m.draft.taskAttemptId === attemptId) upsert(m.draft);
    },
  });

  const send = useMutation({
    mutationFn: (p: { prompt: string; draftId?: string }) => api(`/attempts/${attemptId}/follow-up`, { method: 'POST', body: p }),
    onSuccess: (_r, p) => {
      showToast('info', 'Follow-up sent');
      clearIfStill(p.prompt);
    },
  });
  const saveDraft = useMutation({
    mutationFn: (text: string) => api<DraftItem>(`/task-attempts/${attemptId}/follow-up-draft`, { method: 'POST', body: { prompt: text } }),
    onSuccess: (d, text) => {
      upsert(d);
      clearIfStill(text);
    },
  });
  const runQueue = useMutation({
    mutationFn: (sent: string[]) =>
      api(`/task-attempts/${attemptId}/follow-up-queue`, { method: 'POST', body: { queue: sent.map((p, i) => ({ prompt: p, order: i + 1 })), autoExecute: true } }),
    onSuccess: (_r, sent) => {
      showToast('info', `Queued ${sent.length} follow-ups`);
      // prompts added while the queue was being sent stay for the next run
      setQueue((q) => q.slice(sent.length));
    },
  });
  const blank = !prompt.trim();
  // what the Send button allows: Enter on it and Ctrl+Enter in the prompt alike (Ctrl+Enter sent while a send was
  // still waiting for its answer, so a second press sent the prompt twice, and on an attempt that takes none)
  const canSend = !blank && !disabled && !send.isPending;

  return (
    <section className="panel" aria-labelledby={`fu-${attemptId}`}>
      <h2 id={`fu-${attemptId}`}>Follow-up</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (canSend) send.mutate({ prompt });
        }}
      >
        <Field label="Prompt">
          <textarea
            value={prompt}
            onChange={(e) => setPrompt(e.target.value)}
            maxLength={65536}
            placeholder="What should the agent do next? (Ctrl+Enter sends)"
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                e.preventDefault();
                if (canSend) send.mutate({ prompt });
              }
            }}
          />
        </Field>
        {/* on a phone, Send follow-up a row of its own and the other two side by side under it (`.followup-actions`):
            Add to queue wrapped alone onto a second row */}
        <div className="button-row followup-actions">
          <button type="submit" className="primary" disabled={!canSend} aria-describedby={refusal ? refusalId : undefined}>
            Send follow-up
          </button>
          <button type="button" disabled={blank || saveDraft.isPending} onClick={() => saveDraft.mutate(prompt)}>
            Save draft
          </button>
          <button
            type="button"
            disabled={blank}
            onClick={() => {
              setQueue((q) => [...q, prompt]);
              setPrompt('');
            }}
          >
            Add to queue
          </button>
          {refusal ? (
            <span id={refusalId} className="muted merge-refusal">
              {refusal}
            </span>
          ) : null}
        </div>
      </form>
      {queue.length ? (
        <div className="subpanel">
          <h3>Queue</h3>
          <ol>
            {queue.map((q, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: the queue is edited by position
              <li key={i}>
                <span className="clip">{q}</span>{' '}
                <button type="button" className="link-button" disabled={runQueue.isPending} onClick={() => setQueue((qs) => qs.filter((_, j) => j !== i))} aria-label={`Remove queued prompt ${i + 1}`}>
                  remove
                </button>
              </li>
            ))}
          </ol>
          <button type="button" className="primary" disabled={disabled || runQueue.isPending} onClick={() => runQueue.mutate(queue)}>
            Run queue ({queue.length})
          </button>
        </div>
      ) : null}
      {drafts.length ? (
        <div className="subpanel">
          <h3>Drafts</h3>
          <ul className="draft-list">
            {drafts.map((d) => (
              <li key={d.id}>
                <span className="clip">{draftText(d)}</span> <span className="muted">{d.status ?? d.type}</span>{' '}
                <button type="button" className="link-button" onClick={() => setPrompt(draftText(d))}>
                  edit
                </button>{' '}
                {d.type === 'follow_up' && d.status === 'draft' ? (
                  <button type="button" className="link-button" disabled={disabled || send.isPending} onClick={() => send.mutate({ prompt: draftText(d), draftId: d.id })}>
                    send
                  </button>
                ) : null}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}
