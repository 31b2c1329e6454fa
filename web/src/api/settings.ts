/** Webhooks and their delivery log (api/task/webhooks.ts; docs/webhooks.md). */
import { useQuery } from '@tanstack/react-query';
import { api, apiPage } from './client';
import { queryKeys } from './queryKeys';

/**
 * The events a webhook may subscribe to: a copy of lib/db/webhooks.ts's list (the board bundles nothing from the
 * server's code); test/ui/webClient.test.ts fails when the two differ.
 */
export const WEBHOOK_EVENTS = [
  'task.created',
  'task.status_changed',
  'task.completed',
  'task.failed',
  'task.cancelled',
  'attempt.started',
  'attempt.completed',
  'attempt.failed',
  'attempt.cancelled',
  'approval.created',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'approval.cancelled',
] as const;

/** The receiver as the deliveries found it (its breaker; docs/webhooks.md, "The breaker"). */
export interface Receiver {
  state: 'ok' | 'failing';
  failingSince: string | null;
  /** while the breaker is open (deliveries held back): when the next probe may go */
  nextProbeAt: string | null;
  consecutiveFailures: number;
}
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  active: boolean;
  createdAt: string;
  receiver: Receiver;
}
export interface Delivery {
  id: string;
  eventSeq: number;
  event: string;
  attempt: number;
  statusCode: number | null;
  success: boolean;
  error: string | null;
  durationMs: number;
  /** an open breaker's probe: it tried the receiver for all the webhook's deliveries */
  probe: boolean;
  createdAt: string;
}

// webhooks and deliveries have no stream: refetched on focus (the webhooks too, for their receiver's state)
export const useWebhooks = () =>
  useQuery({
    queryKey: queryKeys.webhooks(),
    queryFn: async ({ signal }) => (await apiPage<Webhook>('/webhooks', { query: { limit: 100 }, signal })).data,
    refetchOnWindowFocus: true,
    staleTime: 0,
    meta: { inlineError: true },
  });

export const useDeliveries = (id: string | null) =>
  useQuery({
    queryKey: [...queryKeys.webhooks(), id, 'deliveries'],
    queryFn: async ({ signal }) => (await apiPage<Delivery>(`/webhooks/${encodeURIComponent(id ?? '')}/deliveries`, { query: { limit: 50 }, signal })).data,
    enabled: !!id,
    refetchOnWindowFocus: true,
    staleTime: 0,
    meta: { inlineError: true },
  });

export const createWebhook = (url: string, events: string[], secret: string) => api<Webhook>('/webhooks', { method: 'POST', body: { url, events, secret } });
export const deleteWebhook = (id: string) => api(`/webhooks/${encodeURIComponent(id)}`, { method: 'DELETE' });
