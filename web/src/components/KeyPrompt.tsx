/**
 * Asks for the task service key when the API answered 401 (a key or `users` is configured). The key is kept in
 * sessionStorage and sent as a bearer header; every query is refetched with it.
 */
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { getApiKey, onUnauthorized, setApiKey } from '../api';
import { Dialog } from './Dialog';
import { Field } from './Field';

export function KeyPrompt() {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState('');
  const [hadKey, setHadKey] = useState(false);
  // set by Use key with nothing typed; said at the field until a key is typed (before, Enter did nothing)
  const [triedEmpty, setTriedEmpty] = useState(false);
  const qc = useQueryClient();
  useEffect(
    () =>
      onUnauthorized(() => {
        setHadKey(getApiKey() !== null);
        setTriedEmpty(false);
        setOpen(true);
      }),
    [],
  );
  return (
    <Dialog open={open} title="API key required" onClose={() => setOpen(false)}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const key = value.trim();
          if (!key) {
            setTriedEmpty(true);
            return;
          }
          setApiKey(key);
          setValue('');
          setOpen(false);
          void qc.invalidateQueries();
        }}
      >
        <p>{hadKey ? 'The stored key was refused. ' : ''}This Armada server requires an API key (ARMADA_TASK_API_KEY or a user key).</p>
        <Field label="API key" error={triedEmpty && !value.trim() ? 'Type the key: it cannot be empty.' : null}>
          <input type="password" autoComplete="off" data-autofocus value={value} onChange={(e) => setValue(e.target.value)} />
        </Field>
        <div className="dialog-actions">
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
          <button type="submit" className="primary">
            Use key
          </button>
        </div>
      </form>
    </Dialog>
  );
}
