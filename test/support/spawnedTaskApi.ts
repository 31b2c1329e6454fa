/**
 * A spawned `armada api --service task` (its defaults, so the API's database limits are the shipped ones) on a test
 * database of its own, with one project, set up before a file's tests and removed after them. For the tests that hold
 * rows from a separate connection and watch how the API's answers come (apiLockTimeout, apiLockQueue).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnApi, type ApiProcess } from './apiProcess';
import { createTestDatabase, makeGitRepo } from './harness';
import { timedRequest, type TimedAnswer } from './timedRequest';

export interface SpawnedTaskApi {
  api: ApiProcess;
  database: Awaited<ReturnType<typeof createTestDatabase>>;
  projectId: string;
  /** A request to the task service, answered or failed within 120 s, with its time. */
  send(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown): Promise<TimedAnswer>;
  /** The stored title of a task, read past the API. */
  titleOf(taskId: string): Promise<string | undefined>;
}

/** Registers the beforeAll/afterAll; the returned object's fields are set once beforeAll ran. */
export function spawnedTaskApi(opts: { tmpPrefix: string; projectName: string }): SpawnedTaskApi {
  let home: string | undefined;
  const ctx = {
    send: (method, url, payload) => timedRequest(`${ctx.api.base('task')}${url}`, { method, payload, timeoutMs: 120_000 }),
    titleOf: async (taskId) => (await ctx.database.pool.query<{ title: string }>('SELECT title FROM tasks WHERE id = $1', [taskId])).rows[0]?.title,
  } as SpawnedTaskApi;
  beforeAll(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), opts.tmpPrefix));
    ctx.database = await createTestDatabase();
    ctx.api = await spawnApi({ home, databaseUrl: ctx.database.url, services: ['task'] });
    const p = await ctx.send('POST', '/api/projects', { name: opts.projectName, repository: { url: makeGitRepo() } });
    expect(p.status).toBe(201);
    ctx.projectId = (p.body.data as { id: string }).id;
  }, 200_000);
  afterAll(async () => {
    await ctx.api?.stop();
    await ctx.database?.drop();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });
  return ctx;
}
