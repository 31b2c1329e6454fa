/**
 * Opens a pull request of an attempt's branch (POST /api/task-attempts/:id/create-pr). When the acting user has no
 * code-host token (401 codehost_auth_required) it runs the device flow: shows the user code and the verification
 * address, polls every `interval` seconds until the host issued the token, then creates the pull request.
 */
import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { ApiError, api } from '../../api';
import { Dialog } from '../Dialog';
import type { Attempt, DeviceCode, PullRequest } from './taskTypes';

export function CreatePrDialog({ open, attempt, taskTitle, onClose }: { open: boolean; attempt: Attempt; taskTitle: string; onClose: () => void }) {
  const [title, setTitle] = useState(taskTitle);
  const [body, setBody] = useState('');
  const [draft, setDraft] = useState(false);
  const [device, setDevice] = useState<DeviceCode | null>(null);
  const [pr, setPr] = useState<PullRequest | null>(null);
  const [error, setError] = useState<string | null>(null);

  const createRef = useRef<() => void>(() => {});
  const create = useMutation({
    mutationFn: () => api<PullRequest>(`/task-attempts/${attempt.id}/create-pr`, { method: 'POST', body: { title, body, draft } }),
    onSuccess: (p) => {
      setPr(p);
      setError(null);
    },
    onError: async (err) => {
      if (err instanceof ApiError && err.code === 'codehost_auth_required') {
        try {
          setDevice(await api<DeviceCode>('/auth/codehost/device', { method: 'POST' }));
          setError(null);
        } catch (e) {
          setError((e as Error).message);
        }
      } else setError(err.message);
    },
  });

  createRef.current = () => create.mutate();

  // device flow: poll until the token is issued (200), the code expires or the host refuses
  useEffect(() => {
    if (!device) return;
    let stopped = false;
    let wait = device.interval * 1000;
    const deadline = Date.now() + device.expires_in * 1000;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      if (stopped) return;
      try {
        await api('/auth/codehost/device/poll', { method: 'POST', body: { device_code: device.device_code } });
        if (stopped) return;
        setDevice(null);
        createRef.current();
        return;
      } catch (err) {
        if (stopped) return;
        const code = err instanceof ApiError ? err.code : '';
        if (code === 'slow_down') wait += 5000;
        else if (code !== 'authorization_pending') {
          setDevice(null);
          setError((err as Error).message);
          return;
        }
      }
      if (Date.now() > deadline) {
        setDevice(null);
        setError('The sign-in code expired; start again.');
        return;
      }
      timer = setTimeout(poll, wait);
    };
    timer = setTimeout(poll, wait);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [device]);

  return (
    <Dialog open={open} title="Create pull request" onClose={onClose}>
      {pr ? (
        <div>
          <p>
            Pull request{' '}
            <a href={pr.htmlUrl} target="_blank" rel="noreferrer">
              #{pr.number} {pr.title}
            </a>{' '}
            is {pr.state} ({pr.head} → {pr.base}).
          </p>
          <div className="dialog-actions">
            {/* biome-ignore lint/a11y/noAutofocus: shown after the dialog opened (data-autofocus acts only on open) */}
            <button type="button" className="primary" onClick={onClose} autoFocus>
              Close
            </button>
          </div>
        </div>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate();
          }}
        >
          <label className="field">
            <span>Title</span>
            <input value={title} onChange={(e) => setTitle(e.target.value)} required maxLength={256} data-autofocus />
          </label>
          <label className="field">
            <span>Description</span>
            <textarea value={body} onChange={(e) => setBody(e.target.value)} maxLength={65536} />
          </label>
          <label className="checkbox-row">
            <input type="checkbox" checked={draft} onChange={(e) => setDraft(e.target.checked)} /> Draft pull request
          </label>
          <p className="muted">
            Pushes {attempt.branch ?? 'the attempt branch'} to origin, then opens the pull request against {attempt.baseBranch ?? 'the base branch'}.
          </p>
          {device ? (
            <div className="banner banner-warning" role="status">
              <span>
                Sign in to the code host: open{' '}
                <a href={device.verification_uri} target="_blank" rel="noreferrer">
                  {device.verification_uri}
                </a>{' '}
                and enter the code <strong className="user-code">{device.user_code}</strong>. Waiting for the sign-in…
              </span>
            </div>
          ) : null}
          {error ? (
            <p className="form-error" role="alert">
              {error}
            </p>
          ) : null}
          <div className="dialog-actions">
            <button type="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={create.isPending || !!device}>
              Create pull request
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
