import { workflowInfo } from '@temporalio/workflow';

/**
 * The nominal time a scheduled start was due: Temporal's TemporalScheduledStartTime (the cron time, without jitter),
 * else the time in the workflow id.
 */
export function scheduledTime(): string | null {
  const info = workflowInfo();
  const attr = (info.searchAttributes as Record<string, unknown[] | undefined> | undefined)?.TemporalScheduledStartTime?.[0];
  if (attr instanceof Date) return attr.toISOString();
  if (typeof attr === 'string' && !Number.isNaN(Date.parse(attr))) return new Date(attr).toISOString();
  const m = /-(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$/.exec(info.workflowId);
  return m?.[1] ? new Date(m[1]).toISOString() : null;
}

/** The id of the Temporal Schedule that started this run (TemporalScheduledById), if a schedule did. */
export function scheduleIdOfRun(): string | null {
  const attr = (workflowInfo().searchAttributes as Record<string, unknown[] | undefined> | undefined)?.TemporalScheduledById?.[0];
  return typeof attr === 'string' ? attr : null;
}
