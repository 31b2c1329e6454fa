/**
 * Which live streams are reconnecting right now, and what each of them carries: the connection banner reads it to
 * say which service's live updates are down (ConnectionBanner). When the last of them is back, the `onReconnected`
 * listeners run (main.tsx reloads the queries that failed meanwhile).
 */
import { useSyncExternalStore } from 'react';
import type { Service } from './client';

/** A stream as the banner names it: the service it comes from, and what it keeps live on the screen. */
export interface StreamInfo {
  service: Service;
  what: string;
}

/**
 * What the stream at `path` carries, in the board's words. Every stream today is the task service's (`/ws/…`,
 * `/api/events/…`); one of another service would come through its proxy, `/svc/<service>/…`.
 */
export function describeStream(path: string): StreamInfo {
  const [p = path, query = ''] = path.split('?');
  const proxied = /^\/svc\/(scheduler|agents|traces)\//.exec(p);
  if (proxied) return { service: proxied[1] as Service, what: 'live updates' };
  if (p === '/ws/events') {
    const topics = new URLSearchParams(query).get('topics') ?? '';
    if (topics.startsWith('project:')) return { service: 'task', what: "changes to this project's tasks" };
    if (topics.startsWith('task:')) return { service: 'task', what: "this task's status and attempts" };
    return { service: 'task', what: 'task and approval events' };
  }
  if (p.startsWith('/ws/execution-processes/')) return { service: 'task', what: 'the live log' };
  if (p.startsWith('/api/events/task-attempts/') && p.endsWith('/diff')) return { service: 'task', what: 'the live diff' };
  if (/^\/ws\/projects\/[^/]+\/drafts$/.test(p)) return { service: 'task', what: 'follow-up drafts' };
  return { service: 'task', what: 'live updates' };
}

/** The streams down now, with when each was lost (ms since the epoch). */
export interface LostStream extends StreamInfo {
  since: number;
}

const lost = new Map<symbol, LostStream>();
let snapshot: readonly LostStream[] = [];
const listeners = new Set<() => void>();
const reconnectListeners = new Set<() => void>();

function emit(): void {
  snapshot = [...lost.values()];
  for (const l of listeners) l();
}

/** The stream `id` (opened at `path`) lost its connection and is retrying. */
export function markLost(id: symbol, path: string): void {
  if (lost.has(id)) return;
  lost.set(id, { ...describeStream(path), since: Date.now() });
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

/** The streams that lost their connection and have not got it back yet, oldest first (empty when all are up). */
export function lostStreams(): readonly LostStream[] {
  return snapshot;
}

/** lostStreams(), re-rendering when it changes (the connection banner). */
export function useLostStreams(): readonly LostStream[] {
  return useSyncExternalStore(subscribe, lostStreams);
}

/** true while at least one stream lost its connection and has not got it back yet. */
export function useConnectionLost(): boolean {
  return useSyncExternalStore(subscribe, () => lost.size > 0);
}
