/**
 * How many live streams are reconnecting right now: the "connection lost — reconnecting" banner reads it. When the
 * last of them is back, the `onReconnected` listeners run (main.tsx reloads the queries that failed meanwhile).
 */
import { useSyncExternalStore } from 'react';

const lost = new Set<symbol>();
const listeners = new Set<() => void>();
const reconnectListeners = new Set<() => void>();

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

/** A stream got its connection (back): like markConnected, and when it was the last one lost, the service is back. */
export function markOpen(id: symbol): void {
  if (!lost.delete(id)) return;
  emit();
  if (lost.size === 0) for (const l of reconnectListeners) l();
}

/** Calls `listener` each time every lost stream has reconnected (the banner goes away). Returns unsubscribe. */
export function onReconnected(listener: () => void): () => void {
  reconnectListeners.add(listener);
  return () => reconnectListeners.delete(listener);
}

function subscribe(l: () => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/** true while at least one stream lost its connection and has not got it back yet. */
export function useConnectionLost(): boolean {
  return useSyncExternalStore(subscribe, () => lost.size > 0);
}
