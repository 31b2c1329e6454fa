/**
 * Every way a running agent is ended from outside, each on an agent that works until it is stopped (the scripted
 * agent's SLEEP: a child `sleep` in its group, a line every 500 ms): the agent's process group is gone, and the
 * process's log, read through the API, ends with one line saying how the run ended, and says it once.
 *
 * The paths: the attempt's cancel and the task's cancel (the API writes the rows, then cancels the workflow: the
 * agent is stopped by the row watch or by Temporal's cancellation, whichever comes first), a cancel of the workflow
 * from Temporal's side (`temporal workflow cancel`, the Temporal UI: only Temporal's cancellation reaches the agent),
 * and the process's stop and cancel (its row and the stopProcess signal; no cancellation). The attempt ends cancelled
 * by each cancel of it, completed after the process's stop or cancel (they end only the run: `agent stopped`).
 *
 * Before (session 48): a run stopped by Temporal's cancellation queued its `agent cancelled (exit SIGTERM)` line after
 * the cancellation had aborted the flush that was to store it, so the line stayed in the queue and was never written:
 * the cancel from Temporal's side always lost it (the log ended with the agent's last `still working`), the API's
 * cancels whenever Temporal's cancellation came before the row watch's look. And the cancel from Temporal's side left
 * the attempt `running` for good (nothing but the API's cancel recorded an attempt cancelled).
 */
import { groupAlive } from '../../lib/process/processGroup';
import { attemptStackForFile } from '../support/attemptHelpers';
import { eventually } from '../support/harness';

jest.setTimeout(120_000);

const h = attemptStackForFile();

interface LogLine {
  level: string;
  message: string;
}

/** The lines that say how a run ended (an agent's own lines never start so). */
const END_LINE = /^(agent (exited with code|stopped|cancelled|timed out)|this worker shut down)/;

const logsOf = (processId: string): Promise<LogLine[]> => h.logs(processId);

interface Path {
  path: string;
  end: (ids: { attemptId: string; taskId: string; processId: string }) => Promise<void>;
  /** the process row's status and the attempt's after it */
  process: string;
  attempt: string;
  line: RegExp;
}

const paths: Path[] = [
  {
    path: 'POST /api/attempts/:id/cancel',
    end: async ({ attemptId }) => expect((await h.inject('POST', `/api/attempts/${attemptId}/cancel`)).statusCode).toBe(200),
    process: 'cancelled',
    attempt: 'cancelled',
    line: /^agent cancelled \(exit SIG(TERM|KILL)\)$/,
  },
  {
    path: 'POST /api/tasks/:id/cancel',
    end: async ({ taskId }) => expect((await h.inject('POST', `/api/tasks/${taskId}/cancel`)).statusCode).toBe(200),
    process: 'cancelled',
    attempt: 'cancelled',
    line: /^agent cancelled \(exit SIG(TERM|KILL)\)$/,
  },
  {
    path: "the workflow cancelled from Temporal's side",
    end: async ({ attemptId }) => {
      await (await h.stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`).cancel();
    },
    process: 'cancelled',
    attempt: 'cancelled',
    line: /^agent cancelled \(exit SIG(TERM|KILL)\)$/,
  },
  {
    path: 'POST /api/execution-processes/:id/stop',
    end: async ({ processId }) => expect((await h.inject('POST', `/api/execution-processes/${processId}/stop`)).statusCode).toBe(200),
    process: 'stopped',
    attempt: 'completed',
    line: /^agent stopped \(exit SIG(TERM|KILL)\)$/,
  },
  {
    // the process's cancel ends that run only, as its stop does (the attempt's changes kept)
    path: 'POST /api/processes/:id/cancel',
    end: async ({ processId }) => expect((await h.inject('POST', `/api/processes/${processId}/cancel`)).statusCode).toBe(200),
    process: 'cancelled',
    attempt: 'completed',
    line: /^agent stopped \(exit SIG(TERM|KILL)\)$/,
  },
];

test.each(paths)('$path: the agent is stopped and its log ends with one line saying so', async ({ end, process: status, attempt: attemptStatus, line }) => {
  const p = await h.project();
  const taskId = await h.task(p.id, 'SLEEP until ended');
  const { attemptId, processId } = await h.start(taskId);
  const pid = await eventually(async () => (await h.inject('GET', `/api/processes/${processId}`)).json().data.pid as number | null, 30_000);
  // the agent works: its lines are being stored
  await eventually(async () => (await logsOf(processId)).some((l) => l.message === 'still working'), 30_000);

  await end({ attemptId, taskId, processId });
  await eventually(async () => !groupAlive(pid), 20_000, 100);
  // the run has ended: the workflow closed (cancelled), or the stopped run's attempt recorded
  if (attemptStatus === 'completed') expect((await h.until(attemptId, ['completed', 'failed'], 60_000)).status).toBe('completed');
  else {
    const handle = (await h.stack.temporal.client()).workflow.getHandle(`attempt:${attemptId}`);
    await eventually(async () => (await handle.describe()).status.name !== 'RUNNING', 60_000, 200);
  }
  expect((await h.inject('GET', `/api/processes/${processId}`)).json().data.status).toBe(status);

  const logs = await logsOf(processId);
  const ends = logs.filter((l) => END_LINE.test(l.message));
  expect(ends).toHaveLength(1);
  expect(ends[0]?.message).toMatch(line);
  expect(logs.at(-1)).toEqual(ends[0]);
  expect(logs.filter((l) => l.level === 'error')).toEqual([]);
  // the attempt's own status: cancelled by every cancel of it, also Temporal's (before session 48 that one left it running)
  expect((await h.attempt(attemptId)).status).toBe(attemptStatus);
  // a workflow cancel Temporal took is not owed (lib/attempts/owedCancels.ts)
  const owed = await h.stack.db.query('SELECT 1 FROM attempts WHERE id = $1 AND workflow_cancel_owed_since IS NOT NULL', [attemptId]);
  expect(owed.rowCount).toBe(0);
});
