/**
 * The task read cache (lib/events/invalidatingCache.ts): list pages and task details are served from memory, and no
 * read that starts after a write's commit, through any API replica, by a worker, or by plain SQL, sees data from
 * before it.
 */
import { Client, Pool } from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildService } from '../../api/services';
import { createMetrics } from '../../lib/metrics';
import { LISTENER_APPLICATION_NAME } from '../../lib/events/listener';
import { eventually, logger, makeGitRepo, startTestStack, testConfig, type TestStack } from '../support/harness';

let stack: TestStack;
let projectId: string;
const extraApps: FastifyInstance[] = [];
const extraPools: Pool[] = [];

const get = async (app: FastifyInstance, url: string, headers: Record<string, string> = {}) => {
  const r = await app.inject({ method: 'GET', url, headers });
  expect(r.statusCode).toBe(200);
  return { body: r.json(), cache: r.headers['x-armada-cache'] as string };
};
const titles = (body: { data: { title: string }[] }) => body.data.map((t) => t.title);

/** Another task-service replica on the same database: its own pool, listener and cache. */
async function replica(file: Record<string, unknown> = {}): Promise<FastifyInstance> {
  const db = new Pool({ connectionString: stack.dbUrl, max: 4 });
  extraPools.push(db);
  const config = testConfig(file);
  const app = await buildService('task', {
    db,
    config,
    keys: stack.keys,
    temporal: stack.temporal,
    logger,
    metrics: createMetrics(),
  });
  await app.ready();
  extraApps.push(app);
  return app;
}

beforeAll(async () => {
  stack = await startTestStack({ services: ['task'] });
  projectId = (
    await stack.app('task').inject({
      method: 'POST',
      url: '/api/projects',
      payload: { name: 'Cache', repository: { url: makeGitRepo() } },
    })
  ).json().data.id;
  for (let i = 0; i < 5; i++) {
    await stack.app('task').inject({
      method: 'POST',
      url: '/api/tasks',
      payload: { projectId, title: `task ${i}` },
    });
  }
});
afterAll(async () => {
  for (const a of extraApps) await a.close();
  for (const p of extraPools) await p.end();
  await stack.close();
});

describe('task read cache', () => {
  test('a repeated page is a hit, identical to a database read; Cache-Control: no-cache reads the database', async () => {
    const app = stack.app('task');
    const url = `/api/tasks?projectId=${projectId}&limit=3&sort=createdAt`;
    const first = await get(app, url);
    const second = await get(app, url);
    const fresh = await get(app, url, { 'cache-control': 'no-cache' });
    expect(second.cache).toBe('hit');
    expect(fresh.cache).toBe('bypass');
    expect(second.body.data).toEqual(first.body.data);
    expect(second.body.pagination).toEqual(first.body.pagination);
    expect(fresh.body.data).toEqual(first.body.data);
    expect(titles(second.body)).toEqual(['task 0', 'task 1', 'task 2']);
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/armada_task_read_cache_total\{cache="list",outcome="hit"\} [1-9]/);
  });

  test('every read after a commit by another connection (a worker, plain SQL) sees it', async () => {
    const app = stack.app('task');
    const url = `/api/tasks?projectId=${projectId}&limit=20&sort=createdAt`;
    const writer = new Client({ connectionString: stack.dbUrl });
    await writer.connect();
    try {
      let hitsBeforeWrites = 0;
      for (let i = 0; i < 60; i++) {
        // make sure the page is cached, then change it behind the API's back and read at once
        await get(app, url);
        if ((await get(app, url)).cache === 'hit') hitsBeforeWrites++;
        await writer.query(`UPDATE tasks SET title = $1 WHERE project_id = $2 AND title LIKE 'task 4%'`, [`task 4 v${i}`, projectId]);
        const after = await get(app, url);
        expect(titles(after.body)[4]).toBe(`task 4 v${i}`);
      }
      expect(hitsBeforeWrites).toBe(60);
      // inserts and deletes change the total as well
      await writer.query(`INSERT INTO tasks (id, project_id, title) VALUES ('sql-made', $1, 'made by sql')`, [projectId]);
      expect((await get(app, url)).body.pagination.total).toBe(6);
      await writer.query(`DELETE FROM tasks WHERE id = 'sql-made'`);
      expect((await get(app, url)).body.pagination.total).toBe(5);
    } finally {
      await writer.end();
    }
  });

  test('under concurrent reads and writes no read returns a page older than a write acknowledged before it began', async () => {
    const app = stack.app('task');
    const b = await replica();
    const url = `/api/tasks?projectId=${projectId}&limit=20&sort=createdAt`;
    const writer = new Client({ connectionString: stack.dbUrl });
    await writer.connect();
    let acknowledged = 0;
    let writing = true;
    const violations: string[] = [];
    let reads = 0;
    let hits = 0;
    const version = (body: { data: { title: string }[] }) => Number(/ w(\d+)$/.exec(titles(body)[1] ?? '')?.[1] ?? 0);
    const reader = async (target: FastifyInstance) => {
      while (writing) {
        const floor = acknowledged;
        const r = await get(target, url);
        reads++;
        if (r.cache === 'hit') hits++;
        if (version(r.body) < floor) violations.push(`read w${version(r.body)} after w${floor} was acknowledged (${r.cache})`);
        await new Promise((r) => setImmediate(r)); // let the writer's I/O in even if every read were answered from memory
      }
    };
    try {
      const readers = [app, app, app, b, b, b].map(reader);
      for (let i = 1; i <= 150; i++) {
        await writer.query(`UPDATE tasks SET title = $1 WHERE project_id = $2 AND title LIKE 'task 1%'`, [`task 1 w${i}`, projectId]);
        acknowledged = i;
        if (i % 3 === 0) await new Promise((r) => setTimeout(r, 2));
      }
      writing = false;
      await Promise.all(readers);
    } finally {
      writing = false;
      await writer.end();
    }
    expect(violations).toEqual([]);
    expect(reads).toBeGreaterThan(150);
    expect(hits).toBeGreaterThan(0);
  });

  test('two replicas: a write through one is seen by the very next read through the other', async () => {
    const a = stack.app('task');
    const b = await replica();
    const url = `/api/tasks?projectId=${projectId}&limit=20&sort=createdAt`;
    const id = (await get(a, url)).body.data[3].id as string;
    let hits = 0;
    for (let i = 0; i < 40; i++) {
      await get(b, url);
      if ((await get(b, url)).cache === 'hit') hits++;
      const patched = await a.inject({
        method: 'PATCH',
        url: `/api/tasks/${id}`,
        payload: {
          title: `task 3 r${i}`,
          status: i % 2 ? 'review' : 'pending',
        },
      });
      expect(patched.statusCode).toBe(200);
      const seen = await get(b, url);
      expect(titles(seen.body)[3]).toBe(`task 3 r${i}`);
      expect(seen.body.data[3].status).toBe(i % 2 ? 'review' : 'pending');
    }
    expect(hits).toBe(40);
  });

  test('deleting a project drops its tasks from cached pages', async () => {
    const app = stack.app('task');
    const other = (
      await app.inject({
        method: 'POST',
        url: '/api/projects',
        payload: { name: 'Doomed', repository: { url: makeGitRepo() } },
      })
    ).json().data.id;
    await app.inject({
      method: 'POST',
      url: '/api/tasks',
      payload: { projectId: other, title: 'doomed task' },
    });
    const url = '/api/tasks?limit=100&search=doomed';
    await get(app, url);
    expect((await get(app, url)).body.pagination.total).toBe(1);
    const b = await replica();
    await get(b, url);
    expect((await get(b, url)).cache).toBe('hit');
    expect((await app.inject({ method: 'DELETE', url: `/api/projects/${other}` })).statusCode).toBe(200);
    expect((await get(app, url)).body.data).toEqual([]);
    expect((await get(b, url)).body.data).toEqual([]);
  });

  test('with its LISTEN connection killed the cache is bypassed, then used again once it is back; nothing stale is served', async () => {
    const app = stack.app('task');
    const url = `/api/tasks?projectId=${projectId}&limit=20&sort=createdAt`;
    await get(app, url);
    expect((await get(app, url)).cache).toBe('hit');
    const admin = new Client({ connectionString: stack.dbUrl });
    await admin.connect();
    try {
      const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [
        LISTENER_APPLICATION_NAME,
      ]);
      expect(killed.rowCount).toBeGreaterThan(0);
      // changed while nobody listens: no notification will ever arrive for this
      await admin.query(`UPDATE tasks SET title = 'task 2 unheard' WHERE project_id = $1 AND title = 'task 2'`, [projectId]);
      const during = await get(app, url);
      expect(titles(during.body)[2]).toBe('task 2 unheard');
      // back: the listener reconnects within seconds and the cache serves again
      await eventually(async () => {
        await get(app, url);
        return (await get(app, url)).cache === 'hit';
      });
      expect(titles((await get(app, url)).body)[2]).toBe('task 2 unheard');
    } finally {
      await admin.end();
    }
  });

  test('taskReadCache.enabled: false reads every page and detail from the database', async () => {
    const off = await replica({ taskReadCache: { enabled: false } });
    const url = `/api/tasks?projectId=${projectId}`;
    await get(off, url);
    expect((await get(off, url)).cache).toBe('bypass');
    const id = (await get(off, url)).body.data[0].id as string;
    await get(off, `/api/tasks/${id}`);
    expect((await get(off, `/api/tasks/${id}`)).cache).toBe('bypass');
  });

  test('a task detail is a hit until its task, an attempt or its project changes, through any connection or replica', async () => {
    const app = stack.app('task');
    const b = await replica();
    const id = (await get(app, `/api/tasks?projectId=${projectId}&sort=createdAt`)).body.data[0].id as string;
    const url = `/api/tasks/${id}`;
    const writer = new Client({ connectionString: stack.dbUrl });
    await writer.connect();
    try {
      const warm = async (target: FastifyInstance) => {
        await get(target, url);
        const r = await get(target, url);
        expect(r.cache).toBe('hit');
        return r.body.data;
      };
      expect((await warm(app)).attempts).toEqual([]);
      await warm(b);
      // an attempt appears (as the attempt engine writes it)
      await writer.query(
        `INSERT INTO attempts (id, task_id, number, llm, status, branch, started_at) VALUES ('att-sql-1', $1, 1, 'claude', 'running', 'armada/x', now() - interval '5 seconds')`,
        [id],
      );
      for (const target of [app, b]) {
        const d = (await get(target, url)).body.data;
        expect(d.attempts.map((a: { id: string }) => a.id)).toEqual(['att-sql-1']);
        expect(d.metadata.branch).toBe('armada/x');
        expect(d.stats.totalAttempts).toBe(1);
      }
      // a running attempt's duration runs on between hits: views are built per request from the kept rows
      const first = (await warm(app)).attempts[0].duration as number;
      await new Promise((r) => setTimeout(r, 1100));
      const later = (await get(app, url));
      expect(later.cache).toBe('hit');
      expect(later.body.data.attempts[0].duration).toBeGreaterThan(first + 1);
      // the attempt finishes
      await warm(b);
      await writer.query(`UPDATE attempts SET status = 'completed', completed_at = now(), total_cost = 0.25 WHERE id = 'att-sql-1'`);
      const done = (await get(b, url)).body.data;
      expect(done.stats).toMatchObject({ successfulAttempts: 1, totalCost: 0.25 });
      // the project's repository changes
      await warm(app);
      await writer.query(`UPDATE projects SET repo_url = 'https://example.com/moved.git' WHERE id = $1`, [projectId]);
      expect((await get(app, url)).body.data.metadata.repository).toBe('https://example.com/moved.git');
      // the task itself, through the other replica's API
      await warm(app);
      expect((await b.inject({ method: 'PATCH', url, payload: { status: 'review' } })).statusCode).toBe(200);
      expect((await get(app, url)).body.data.status).toBe('review');
      // deleted: a 404, and an unknown id is never kept
      await writer.query(`DELETE FROM attempts WHERE id = 'att-sql-1'`);
      expect((await b.inject({ method: 'DELETE', url })).statusCode).toBe(200);
      for (let i = 0; i < 2; i++) {
        const gone = await app.inject({ method: 'GET', url });
        expect(gone.statusCode).toBe(404);
        expect(gone.json().error.code).toBe('TASK_NOT_FOUND');
      }
    } finally {
      await writer.end();
    }
  });
});
