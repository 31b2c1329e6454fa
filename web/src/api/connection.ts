/** How many live streams are reconnecting right now: the "connection lost — reconnecting" banner reads it. */
import { useSyncExternalStore } from 'react';

const lost = new Set<symbol>();
const listeners = new Set<() => void>();

function emit(): void {
  for (const l of listeners) l();
}

export function markLost(id: symbol): void {
  if (lost.has(id)) return;
  lost.add(id);
  emit();
}

export function markConnected(id: symbol): void {
  if (lost.delete(id)) emit();
}

function subscribe(l: () => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/** true while at least one stream lost its connection and has not got it back yet. */
export function useConnectionLost(): boolean {
  return useSyncExternalStore(subscribe, () => lost.size > 0);
}
