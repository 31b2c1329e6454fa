/** The approvals' Prometheus metric, defined once: the workflow's activities and the API's deletes of attempts move it. */
import type { Registry } from 'prom-client';
import { counter } from '../metrics';

export function approvalMetrics(registry: Registry) {
  return {
    /**
     * status: approved, rejected, expired, cancelled (by the requester, or because the attempt was deleted), counted
     * by whoever moved the row out of pending (closeApproval), so each request once.
     */
    decided: counter(registry, 'armada_approvals_total', 'Approval requests reaching a final state, by status', ['status']),
  };
}
