/**
 * A schedule deleted at the moment its run writes the execution row: the row is written without the link (the link
 * is ON DELETE SET NULL: losing a schedule is no reason to lose its run). The write's statement read the schedule in
 * its snapshot, then its foreign-key check waited for the deletion and failed; the run took that as "the workflow is
 * gone" and ended `deleted` although its workflow was there. Real PostgreSQL: the deletion holds its transaction open
 * until the write waits for it.
 */
import crypto from 'node:crypto';
import { Client } from 'pg';
import { createExecutionProgressActivities } from '../../activities/scheduler/executionProgress';
import type { ActivityDeps } from '../../activities';
import { createMetrics } from '../../lib/metrics';
import { createTestDatabase, eventually, logger, testConfig } from '../support/harness';

let db: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

test('a run whose schedule is deleted while it writes its row keeps its row, without the link', async () => {
  await db.pool.query(`INSERT INTO scheduler_workflows (name, description, tasks) VALUES ('race', '', '[]')`);
  const workflowId = (await db.pool.query<{ id: string }>(`SELECT id FROM scheduler_workflows WHERE name = 'race'`)).rows[0]?.id as string;
  const scheduleId = crypto.randomUUID();
  await db.pool.query(
    `INSERT INTO scheduler_schedules (id, workflow, temporal_id, type, cron, timezone) VALUES ($1, 'race', 'schedule-race-extra', 'cron', '* * * * *', 'UTC')`,
    [scheduleId],
  );
  const activities = createExecutionProgressActivities({ db: db.pool, logger, metrics: createMetrics(), config: testConfig() } as unknown as ActivityDeps);

  const deleter = new Client({ connectionString: db.url });
  await deleter.connect();
  try {
    await deleter.query('BEGIN');
    await deleter.query('DELETE FROM scheduler_schedules WHERE id = $1', [scheduleId]);
    const executionId = crypto.randomUUID();
    const now = new Date().toISOString();
    const writing = activities.recordProgress({
      id: executionId,
      workflow: 'race',
      workflowId,
      temporalWorkflowId: `execution:${executionId}`,
      trigger: 'schedule',
      status: 'running',
      scheduledAt: now,
      startedAt: now,
      completedAt: null,
      tasks: [],
      error: null,
      scheduleId,
      logs: [{ key: 'w:0', ts: now, level: 'info', message: 'Execution started' }],
    });
    // the write's statement waits for the deletion's row lock (its snapshot still has the schedule)
    await eventually(async () => {
      const { rows } = await db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%scheduler_executions%'`);
      return rows.length > 0;
    });
    await deleter.query('COMMIT');
    expect(await writing).toEqual({ exists: true });
    const { rows } = await db.pool.query('SELECT workflow_id, schedule_id, status FROM scheduler_executions WHERE id = $1', [executionId]);
    expect(rows).toEqual([{ workflow_id: workflowId, schedule_id: null, status: 'running' }]);
    expect((await db.pool.query('SELECT count(*)::int AS n FROM scheduler_execution_logs WHERE execution_id = $1', [executionId])).rows[0]).toEqual({ n: 1 });
  } finally {
    await deleter.end();
  }
}, 60_000);
