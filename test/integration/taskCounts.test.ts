/**
 * task_counts (rows per project and status, migration 065) equals the real counts of tasks after bulk inserts,
 * updates and deletes, project deletes cascading to their tasks, concurrent writers and template applies.
 * Correctness only: the cost of these statements is measured by bench/scale.ts, not here.
 */
import { Client } from 'pg';
import { makeGitRepo, startTestStack, type TestStack } from '../support/harness';

let stack: TestStack;
const projects: string[] = [];
const STATUSES = ['pending', 'in_progress', 'review', 'completed', 'failed', 'cancelled'];

/** The counters and the real counts, both without zero rows, sorted the same way. */
async function countsAndTruth(): Promise<{ counters: string[]; truth: string[]; negative: number }> {
  const counters = await stack.db.query<{ k: string }>(
    `SELECT project_id || '/' || status || '=' || n AS k FROM task_counts WHERE n <> 0 ORDER BY project_id, status`,
  );
  const truth = await stack.db.query<{ k: string }>(
    `SELECT project_id || '/' || status || '=' || count(*) AS k FROM tasks GROUP BY project_id, status ORDER BY project_id, status`,
  );
  const negative = await stack.db.query<{ n: string }>('SELECT count(*) AS n FROM task_counts WHERE n < 0');
  return { counters: counters.rows.map((r) => r.k), truth: truth.rows.map((r) => r.k), negative: Number(negative.rows[0]?.n) };
}

async function expectExactCounts(): Promise<void> {
  const { counters, truth, negative } = await countsAndTruth();
  expect(negative).toBe(0);
  expect(counters).toEqual(truth);
}

async function newProject(name: string): Promise<string> {
  const r = await stack.app('task').inject({ method: 'POST', url: '/api/projects', payload: { name, repository: { url: makeGitRepo() } } });
  expect(r.statusCode).toBe(201);
  const id = r.json().data.id as string;
  projects.push(id);
  return id;
}

/** One INSERT … SELECT of n tasks in a project, statuses cycling through all six. */
async function bulkInsert(projectId: string, n: number, prefix: string): Promise<void> {
  await stack.db.query(
    `INSERT INTO tasks (id, project_id, title, status)
     SELECT $1 || '-' || g, $2, 'Task ' || g, ($3::text[])[1 + g % 6] FROM generate_series(1, $4) AS g`,
    [prefix, projectId, STATUSES, n],
  );
}

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  for (const name of ['Counts A', 'Counts B', 'Counts C']) await newProject(name);
});
afterAll(async () => {
  await stack?.close();
});

describe('task_counts', () => {
  test('bulk insert of thousands of tasks in one statement, in several projects', async () => {
    await bulkInsert(projects[0] as string, 5000, 'a');
    await bulkInsert(projects[1] as string, 3000, 'b');
    // one statement over two projects at once
    await stack.db.query(
      `INSERT INTO tasks (id, project_id, title, status)
       SELECT 'mix-' || g, CASE WHEN g % 2 = 0 THEN $1 ELSE $2 END, 'Mixed ' || g, CASE WHEN g % 3 = 0 THEN 'review' ELSE 'pending' END
         FROM generate_series(1, 2000) AS g`,
      [projects[0], projects[2]],
    );
    await expectExactCounts();
    const { rows } = await stack.db.query<{ n: string }>(`SELECT n FROM task_counts WHERE project_id = $1 AND status = 'review'`, [projects[2]]);
    // odd g in 1..2000 divisible by 3: 333
    expect(Number(rows[0]?.n)).toBe(333);
  });

  test('bulk updates of status and project, including rows that do not change, and no-op updates', async () => {
    await stack.db.query(`UPDATE tasks SET status = 'completed' WHERE project_id = $1 AND status IN ('pending', 'review')`, [projects[0]]);
    await expectExactCounts();
    await stack.db.query(`UPDATE tasks SET status = 'failed' WHERE project_id = $1`, [projects[1]]); // some already failed
    await expectExactCounts();
    await stack.db.query(`UPDATE tasks SET project_id = $2 WHERE project_id = $1 AND id LIKE 'a-%' AND status = 'completed'`, [projects[0], projects[2]]);
    await expectExactCounts();
    const before = await countsAndTruth();
    await stack.db.query(`UPDATE tasks SET title = title || '!' WHERE project_id = $1`, [projects[2]]);
    expect(await countsAndTruth()).toEqual(before);
    // status and project at once, per row different
    await stack.db.query(
      `UPDATE tasks SET status = CASE WHEN status = 'failed' THEN 'cancelled' ELSE 'in_progress' END,
                        project_id = CASE WHEN id LIKE '%0' THEN $2 ELSE project_id END
        WHERE project_id = $1`,
      [projects[1], projects[0]],
    );
    await expectExactCounts();
  });

  test('bulk deletes, and a rolled-back transaction of inserts, updates and deletes leaves the counters as they were', async () => {
    await stack.db.query(`DELETE FROM tasks WHERE id LIKE 'mix-%' AND status <> 'pending'`);
    await expectExactCounts();
    const before = await countsAndTruth();
    const c = await stack.db.connect();
    try {
      await c.query('BEGIN');
      await c.query(`INSERT INTO tasks (id, project_id, title) SELECT 'rb-' || g, $1, 'x' FROM generate_series(1, 500) g`, [projects[0]]);
      await c.query(`UPDATE tasks SET status = 'review' WHERE project_id = $1`, [projects[0]]);
      await c.query(`DELETE FROM tasks WHERE project_id = $1`, [projects[1]]);
      await c.query('ROLLBACK');
    } finally {
      c.release();
    }
    expect(await countsAndTruth()).toEqual(before);
  });

  test('deleting a project removes its counters with its tasks and leaves the others exact', async () => {
    const doomed = await newProject('Counts doomed');
    await bulkInsert(doomed, 4000, 'doomed');
    await stack.db.query(`UPDATE tasks SET status = 'review' WHERE project_id = $1 AND id LIKE '%7'`, [doomed]);
    await expectExactCounts();
    const r = await stack.app('task').inject({ method: 'DELETE', url: `/api/projects/${doomed}` });
    expect(r.statusCode).toBe(200);
    expect((await stack.db.query('SELECT 1 FROM tasks WHERE project_id = $1', [doomed])).rowCount).toBe(0);
    expect((await stack.db.query('SELECT 1 FROM task_counts WHERE project_id = $1', [doomed])).rowCount).toBe(0);
    await expectExactCounts();
    // plain SQL too
    const sqlDoomed = await newProject('Counts doomed by SQL');
    await bulkInsert(sqlDoomed, 1000, 'sqldoomed');
    await stack.db.query('DELETE FROM projects WHERE id = $1', [sqlDoomed]);
    expect((await stack.db.query('SELECT 1 FROM task_counts WHERE project_id = $1', [sqlDoomed])).rowCount).toBe(0);
    await expectExactCounts();
  });

  test('concurrent writers on the same counter rows: no lost update, no deadlock', async () => {
    const hot = await newProject('Counts hot');
    await bulkInsert(hot, 600, 'hot');
    const clients = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const c = new Client({ connectionString: stack.dbUrl });
        await c.connect();
        return c;
      }),
    );
    const errors: string[] = [];
    try {
      await Promise.all(
        clients.map(async (c, w) => {
          // each statement its own transaction, as the API's writes are: single-row moves in opposite directions,
          // a multi-row move spreading rows over all six statuses, an insert and a delete
          for (let round = 0; round < 15; round++) {
            const from = STATUSES[(w + round) % 6] as string;
            const to = STATUSES[(w + round + 3) % 6] as string;
            const statements: [string, unknown[]][] = [
              [`UPDATE tasks SET status = $2 WHERE id = (SELECT id FROM tasks WHERE project_id = $1 AND status = $3 LIMIT 1 FOR UPDATE SKIP LOCKED)`, [hot, to, from]],
              [`UPDATE tasks SET status = $2 WHERE id = (SELECT id FROM tasks WHERE project_id = $1 AND status = $3 LIMIT 1 FOR UPDATE SKIP LOCKED)`, [hot, from, to]],
              [
                `UPDATE tasks SET status = ($3::text[])[1 + abs(hashtext(id)::bigint + $4) % 6]
                  WHERE id IN (SELECT id FROM tasks WHERE project_id = $1 AND id LIKE $2 FOR UPDATE SKIP LOCKED)`,
                [hot, `hot-%${w}`, STATUSES, round],
              ],
              [`INSERT INTO tasks (id, project_id, title, status) VALUES ($1, $2, 'new', $3)`, [`hot-w${w}-r${round}`, hot, to]],
            ];
            if (round % 3 === 2) statements.push([`DELETE FROM tasks WHERE id = $1`, [`hot-w${w}-r${round - 1}`]]);
            for (const [sql, params] of statements) {
              await c.query(sql, params).catch((err: Error) => errors.push(err.message));
            }
          }
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    expect(errors).toEqual([]);
    await expectExactCounts();
    const { rows } = await stack.db.query<{ n: string }>('SELECT sum(n) AS n FROM task_counts WHERE project_id = $1', [hot]);
    expect(Number(rows[0]?.n)).toBe(600 + 6 * 15 - 6 * 5);
  });

  test('a template apply of 200 tasks counts them all, and the list total says so', async () => {
    const target = await newProject('Counts template');
    const tasks = Array.from({ length: 200 }, (_, i) => ({ title: `Step ${i}`, description: '', order: i }));
    const t = await stack.app('task').inject({
      method: 'POST',
      url: '/api/task-templates',
      payload: { name: 'Big', description: '', category: 'bulk', tasks },
    });
    expect(t.statusCode).toBe(200);
    const r = await stack.app('task').inject({ method: 'POST', url: `/api/task-templates/${t.json().data.id}/apply`, payload: { projectId: target } });
    expect(r.statusCode).toBe(201);
    await expectExactCounts();
    const { rows } = await stack.db.query<{ n: string }>(`SELECT n FROM task_counts WHERE project_id = $1 AND status = 'pending'`, [target]);
    expect(Number(rows[0]?.n)).toBe(200);
    const list = await stack.app('task').inject({
      method: 'GET',
      url: `/api/tasks?projectId=${target}&limit=5`,
      headers: { 'cache-control': 'no-cache' },
    });
    expect(list.statusCode).toBe(200);
    expect(JSON.stringify(list.json())).toMatch(/"total":200\b/);
  });

  test('TRUNCATE of tasks leaves every counter at zero', async () => {
    await stack.db.query('TRUNCATE tasks CASCADE');
    await expectExactCounts();
    expect((await stack.db.query('SELECT 1 FROM task_counts WHERE n <> 0')).rowCount).toBe(0);
    await bulkInsert(projects[0] as string, 100, 'again');
    await expectExactCounts();
  });
});
