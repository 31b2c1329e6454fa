/**
 * A run's records repeated after the run finished add nothing to its log. The records are local activities: when a
 * workflow task is retried (its worker was slow to complete it, or lost), they run again, and the stop path reads the
 * number of lines written so far (loadRunState) to key its own: the repeated "Execution stopped" came with the next
 * key and was written twice (ci47b, schedulerWorkflows' stop during a flow, on a loaded machine). A record that finds
 * the row finished writes neither the row nor its lines. Real PostgreSQL, the activities themselves.
 */
import crypto from 'node:crypto';
import { createExecutionProgressActivities } from '../../activities/scheduler/executionProgress';
import type { ActivityDeps } from '../../activities';
import type { ExecutionRecord, LogLine } from '../../lib/db/schedulerExecutions';
import { createMetrics } from '../../lib/metrics';
import { createTestDatabase, logger, testConfig } from '../support/harness';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

test('the stop record run again, with the line count read anew, writes no second "Execution stopped"; a late running record adds no lines', async () => {
  await db.pool.query(`INSERT INTO scheduler_workflows (name, description, tasks) VALUES ('repeat', '', '[]')`);
  const workflowId = (await db.pool.query<{ id: string }>(`SELECT id FROM scheduler_workflows WHERE name = 'repeat'`)).rows[0]?.id as string;
  const activities = createExecutionProgressActivities({ db: db.pool, logger, metrics: createMetrics(), config: testConfig() } as unknown as ActivityDeps);
  const id = crypto.randomUUID();
  const now = new Date().toISOString();
  const task = { name: 'slow', type: 'flow', status: 'running', startedAt: now } as unknown as ExecutionRecord['tasks'][number];
  const base: ExecutionRecord = {
    id,
    workflow: 'repeat',
    workflowId,
    temporalWorkflowId: `execution:${id}`,
    trigger: 'manual',
    status: 'running',
    scheduledAt: null,
    startedAt: now,
    completedAt: null,
    tasks: [task],
    error: null,
    scheduleId: null,
  };
  const line = (n: number, level: LogLine['level'], message: string): LogLine => ({ key: `w:${n}`, ts: new Date().toISOString(), level, message });
  const stopped = (n: number) => ({
    ...base,
    status: 'stopped' as const,
    completedAt: new Date().toISOString(),
    tasks: [{ ...task, status: 'stopped' }] as ExecutionRecord['tasks'],
    error: 'Stopped by request',
    logs: [line(n, 'warning', 'Execution stopped')],
  });
  const logs = async () =>
    (await db.pool.query<{ key: string; message: string }>('SELECT key, message FROM scheduler_execution_logs WHERE execution_id = $1 ORDER BY key', [id])).rows.map((r) => `${r.key} ${r.message}`);

  await activities.recordProgress({ ...base, logs: [line(0, 'info', 'Execution started (manual)'), line(1, 'info', 'Task slow started')] });
  // the stop path: the lines so far read back, the terminal record keyed after them
  const first = await activities.loadRunState({ executionId: id, workflow: 'repeat' });
  expect(first.logLines).toBe(2);
  expect(await activities.recordProgress(stopped(first.logLines))).toEqual({ exists: true });

  // the workflow task is retried: the same steps again, the count now including the stop's own line
  const again = await activities.loadRunState({ executionId: id, workflow: 'repeat' });
  expect(again.logLines).toBe(3);
  expect(await activities.recordProgress(stopped(again.logLines))).toEqual({ exists: true });
  // and a running record arriving late (a retried try of an earlier step) changes nothing either
  await activities.recordProgress({ ...base, logs: [line(9, 'info', 'Task slow completed')] });

  expect(await logs()).toEqual(['w:0 Execution started (manual)', 'w:1 Task slow started', 'w:2 Execution stopped']);
  const { rows } = await db.pool.query('SELECT status, error FROM scheduler_executions WHERE id = $1', [id]);
  expect(rows).toEqual([{ status: 'stopped', error: 'Stopped by request' }]);
});
