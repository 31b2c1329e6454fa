/**
 * A one-time schedule paused through its time: Temporal drops a time that passes while its Schedule is paused, and
 * resuming does not bring it back. The schedule shows `expired` (it can never run), a resume is refused (409) instead
 * of answering `active` for a run that never comes, and moving it (PATCH `at`) then resuming runs it once.
 */
import type { TestStack } from '../support/harness';
import { eventually } from '../support/harness';
import { closeSchedulerStack, schedulerInject, startSchedulerStack } from '../support/schedulerStack';

let stack: TestStack;
const uniq = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  stack = await startSchedulerStack();
});
afterAll(async () => {
  await closeSchedulerStack(stack);
});

const inject = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) => schedulerInject(stack)(method, url, payload);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** An `at` `ms` from now, in whole seconds with Z. */
const atIn = (ms: number) => new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

test('paused through its time: expired, a resume is a 409 and nothing runs; moved to a later time and resumed, it runs once', async () => {
  const name = `ot-resume-${uniq}`;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
  const at = atIn(2000);
  const created = await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at, enabled: false });
  expect(created.statusCode).toBe(201);
  const s = created.json();
  const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
  expect(s).toMatchObject({ runAt: new Date(at).toISOString(), enabled: false, status: 'paused', nextRun: null });
  await sleep(Date.parse(at) - Date.now() + 1500);

  // its time passed while it was paused: it will never run (before: `paused`, and `active` once resumed)
  expect((await inject('GET', url)).json()).toMatchObject({ enabled: false, status: 'expired', nextRun: null });
  const resumed = await inject('POST', `${url}/resume`);
  expect([resumed.statusCode, resumed.json()]).toEqual([
    409,
    { detail: `Schedule ${s.id} cannot be resumed: its time ${new Date(at).toISOString()} passed while it was paused; move it first (PATCH "at")` },
  ]);
  // nothing changed: the row stays paused, and so does the Temporal Schedule
  expect((await inject('GET', url)).json()).toMatchObject({ enabled: false, status: 'expired' });
  const temporal = await (await stack.temporal.client()).schedule.getHandle(`schedule:${name}:${s.id}`).describe();
  expect([temporal.state.paused, temporal.info.numActionsTaken]).toEqual([true, 0]);
  await sleep(1500);
  expect((await inject('GET', `/api/v1/executions?workflow=${name}`)).json().executions).toEqual([]);

  // the way out the answer names: a later time, then resume; it runs once
  const later = atIn(3000);
  const moved = await inject('PATCH', url, { at: later });
  expect([moved.statusCode, moved.json()]).toEqual([200, expect.objectContaining({ at: later, enabled: false, status: 'paused' })]);
  const again = await inject('POST', `${url}/resume`);
  expect([again.statusCode, again.json()]).toEqual([200, expect.objectContaining({ enabled: true, status: 'active', nextRun: new Date(later).toISOString() })]);
  await eventually(async () => (await inject('GET', url)).json().status === 'completed', 15_000);
  // the run's row follows Temporal's action
  const runs = await eventually(async () => {
    const listed = (await inject('GET', `/api/v1/executions?workflow=${name}`)).json().executions;
    return listed.length && listed[0].status === 'completed' && listed;
  }, 15_000);
  expect(runs).toEqual([expect.objectContaining({ trigger: 'schedule', scheduleId: s.id })]);
});

test('a one-time schedule that ran may still be paused and resumed (nothing is left to run): 200', async () => {
  const name = `ot-ran-${uniq}`;
  expect((await inject('POST', '/api/v1/workflows', { name, tasks: [{ name: 't', type: 'script', script: 'true' }] })).statusCode).toBe(201);
  const s = (await inject('POST', `/api/v1/workflows/${name}/schedules`, { type: 'one-time', at: 'now' })).json();
  const url = `/api/v1/workflows/${name}/schedules/${s.id}`;
  await eventually(async () => (await inject('GET', url)).json().status === 'completed', 15_000);
  expect((await inject('POST', `${url}/pause`)).json()).toMatchObject({ enabled: false, status: 'completed' });
  const resumed = await inject('POST', `${url}/resume`);
  expect([resumed.statusCode, resumed.json()]).toEqual([200, expect.objectContaining({ enabled: true, status: 'completed' })]);
});
