/** How a schedule row is shown: its fields plus what Temporal says (next run, whether its one action was taken). */
import type { ScheduleRow } from '../../lib/db/schedulerSchedules';
import { schedulerSettings } from '../../lib/scheduler/settings';
import { scheduleState, type ScheduleTarget, type ScheduleTiming } from '../../lib/scheduler/temporalSchedules';
import type { DetailServiceDeps } from '../detailServiceDeps';
import { TEMPORAL_READ_TIMEOUT_MS } from './temporalAccess';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export const targetOf = (s: ScheduleRow): ScheduleTarget => ({ temporalId: s.temporal_id, workflow: s.workflow, workflowId: s.workflow_id, scheduleId: s.id, input: s.input });

export function timingOf(s: ScheduleRow): ScheduleTiming {
  if (s.type === 'cron') return { type: 'cron', cron: s.cron as string, timezone: s.timezone, jitterMs: s.jitter_ms };
  return { type: 'one-time', runAt: s.at === 'now' ? 'now' : (s.run_at as Date) };
}

/** Temporal's view of a schedule; null (not an error) when Temporal cannot be asked right now or does not answer in time. */
async function temporalState(deps: DetailServiceDeps, s: ScheduleRow) {
  try {
    const client = await deps.temporal.client();
    return await client.connection.withDeadline(Date.now() + TEMPORAL_READ_TIMEOUT_MS, () => scheduleState(client, s.temporal_id));
  } catch (err) {
    deps.logger.warn({ err: { message: (err as Error).message }, schedule: s.temporal_id }, 'could not read a schedule from Temporal');
    return null;
  }
}

export async function scheduleView(deps: DetailServiceDeps, s: ScheduleRow) {
  const ran = s.type === 'one-time' && s.ran_at !== null;
  // a default row without a cron has no Temporal Schedule to ask about
  const state = ran || (s.type === 'cron' && s.cron === null) ? null : await temporalState(deps, s);
  let status: 'active' | 'paused' | 'completed' | 'expired';
  if (s.type === 'one-time') {
    // the run records ran_at when it starts; Temporal knows earlier (the run may wait for a worker)
    const catchupMs = schedulerSettings(deps.config).catchupWindowMs;
    const due = (s.run_at as Date).getTime();
    if (ran || (state?.actionsTaken ?? 0) > 0) status = 'completed';
    // Temporal drops a time that passes while its Schedule is paused (a resume does not bring it back)
    else if (!s.enabled) status = due <= Date.now() ? 'expired' : 'paused';
    else if (due + catchupMs < Date.now()) status = 'expired';
    else status = 'active';
  } else status = s.enabled ? 'active' : 'paused';
  return {
    id: s.id,
    workflow: s.workflow,
    type: s.type,
    isDefault: s.is_default,
    schedule: s.cron,
    at: s.at,
    runAt: iso(s.run_at),
    timezone: s.timezone,
    jitter: Math.round(s.jitter_ms / 1000),
    input: s.input ?? null,
    enabled: s.enabled,
    status,
    nextRun: status === 'active' ? iso(state?.nextRun ?? null) : null,
    lastRun: iso(s.last_run),
    createdAt: s.created_at.toISOString(),
  };
}
