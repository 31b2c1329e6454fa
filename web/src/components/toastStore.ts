/** Messages shown in the toast area: errors stay until dismissed, notices go after a few seconds. */
import { useSyncExternalStore } from 'react';
import { errorNote } from '../api/errorNote';

export interface ToastItem {
  id: number;
  kind: 'error' | 'info';
  message: string;
  /** under the message, smaller: for a service that is down, which one and what happens next (api/unavailable.ts) */
  note?: string;
}

let items: ToastItem[] = [];
let nextId = 1;
const listeners = new Set<() => void>();

function set(next: ToastItem[]): void {
  items = next;
  for (const l of listeners) l();
}

export function dismissToast(id: number): void {
  set(items.filter((t) => t.id !== id));
}

export function showToast(kind: ToastItem['kind'], message: string, note?: string): void {
  // the same message twice in a row (a retried query) shows once
  if (items.some((t) => t.kind === kind && t.message === message && t.note === note)) return;
  const id = nextId++;
  set([...items.slice(-4), { id, kind, message, ...(note ? { note } : {}) }]);
  if (kind === 'info') setTimeout(() => dismissToast(id), 4000);
}

/**
 * Shows an error's message (an ApiError carries the server's), with the note ErrorMessage adds (api/errorNote.ts): a
 * service that is down (503, no answer) is named, with what happens next: a screen's read (`action` false) is sent
 * again by itself, an action the user took (a row's Pause, Run now, a save) is not ("try again once it is back").
 */
export function showError(err: unknown, { action = false }: { action?: boolean } = {}): void {
  showToast('error', err instanceof Error ? err.message : String(err), errorNote(err, !action) ?? undefined);
}

export function useToasts(): ToastItem[] {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => items,
  );
}
