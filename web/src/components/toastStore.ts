/** Messages shown in the toast area: errors stay until dismissed, notices go after a few seconds. */
import { useSyncExternalStore } from 'react';

export interface ToastItem {
  id: number;
  kind: 'error' | 'info';
  message: string;
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

export function showToast(kind: ToastItem['kind'], message: string): void {
  // the same message twice in a row (a retried query) shows once
  if (items.some((t) => t.kind === kind && t.message === message)) return;
  const id = nextId++;
  set([...items.slice(-4), { id, kind, message }]);
  if (kind === 'info') setTimeout(() => dismissToast(id), 4000);
}

/** Shows an error's message (an ApiError carries the server's). */
export function showError(err: unknown): void {
  showToast('error', err instanceof Error ? err.message : String(err));
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
