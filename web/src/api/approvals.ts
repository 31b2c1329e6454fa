/** Approval queries and the respond call (api/task/approvals.ts; docs/approvals.md). */
import { useQuery } from '@tanstack/react-query';
import { api, apiPage } from './client';
import { queryKeys } from './queryKeys';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled';

export interface Approval {
  id: string;
  taskAttemptId: string;
  /** the task of that attempt, its project and its current title (read through the attempt: docs/approvals.md) */
  taskId: string;
  projectId: string;
  taskTitle: string;
  type: 'merge' | 'deploy' | 'custom';
  title: string;
  description: string | null;
  metadata: Record<string, unknown>;
  approvers: string[] | null;
  expiresAt: string | null;
  status: ApprovalStatus;
  createdBy: string;
  createdAt: string;
  decidedAt: string | null;
  /** why it was closed when its workflow was closed from Temporal's side; else null */
  closedReason: string | null;
  responses: { approver: string; decision: 'approved' | 'rejected'; comment: string; respondedAt: string }[];
}

/** The acting user's pending approvals (first 100, oldest first). */
export function usePendingApprovals() {
  return useQuery({
    queryKey: queryKeys.approvals('pending'),
    queryFn: async ({ signal }) => (await apiPage<Approval>('/approvals/pending', { query: { limit: 100 }, signal })).data,
    meta: { inlineError: true },
  });
}

/** Closed approvals of the acting user, latest decided first (first 50). */
export const fetchApprovalHistory = async (signal?: AbortSignal) => (await apiPage<Approval>('/approvals/history', { query: { limit: 50 }, signal })).data;

export const getApproval = (id: string) => api<Approval>(`/approvals/${encodeURIComponent(id)}`);

export const respondToApproval = (id: string, decision: 'approved' | 'rejected', comment: string) =>
  api<{ approvalId: string; approvalStatus: ApprovalStatus }>(`/approvals/${encodeURIComponent(id)}/respond`, {
    method: 'POST',
    body: { decision, comment },
  });
