/** The scheduler's tunables (config file key `scheduler`), with their defaults. */
import type { ArmadaConfig } from '../config';

export interface SchedulerSettings {
  /** how far back a schedule catches up on missed times after an outage (Temporal catchupWindow) */
  catchupWindowMs: number;
  /** finished executions older than this are pruned */
  retentionMs: number;
  /** period of the source health check schedule; 0 = no periodic check */
  healthCheckIntervalMs: number;
  /** a script task's timeout when the task names none */
  scriptTimeoutMs: number;
  /** timeout of health, version and flow-list calls to a platform */
  sourceTimeoutMs: number;
  /** how long an execution may be running without a Temporal run before the reconciler fails it */
  reconcileAfterMs: number;
}

export function schedulerSettings(config: ArmadaConfig): SchedulerSettings {
  const s = config.file.scheduler ?? {};
  return {
    catchupWindowMs: (s.catchupWindowSeconds ?? 300) * 1000,
    retentionMs: (s.retentionDays ?? 30) * 86_400_000,
    healthCheckIntervalMs: (s.healthCheckIntervalSeconds ?? 300) * 1000,
    scriptTimeoutMs: (s.scriptTimeoutSeconds ?? 3600) * 1000,
    sourceTimeoutMs: s.sourceTimeoutMs ?? 5000,
    reconcileAfterMs: (s.reconcileAfterSeconds ?? 60) * 1000,
  };
}

/** "850ms", "2.3s", "4m 05s", "1h 02m": the human-readable durations of executions and tasks. */
export function humanDuration(ms: number | null): string | null {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return null;
  // the bounds are those of the rounded value: 999.7 ms is `1.0s`, 59.96 s `1m 00s` (not `1000ms`, `60.0s`)
  if (ms < 999.5) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 59.95) return `${s.toFixed(1)}s`;
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  return h > 0 ? `${h}h ${String(m).padStart(2, '0')}m` : `${m}m ${String(sec).padStart(2, '0')}s`;
}
