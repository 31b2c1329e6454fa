/** What an approval create left behind, read past the API: its workflow's result, its rows and its events. */
import { eventually, type TestStack } from './harness';

export function approvalOutcomes(stack: () => TestStack) {
  return {
    /** Waits for the workflow of approval `id` to close and returns its result. */
    async resultOf(id: string): Promise<unknown> {
      const handle = (await stack().temporal.client()).workflow.getHandle(`approval:${id}`);
      await eventually(async () => (await handle.describe()).status.name !== 'RUNNING', 60_000, 250);
      return handle.result();
    },
    approvalsOf: async (attemptId: string) =>
      (await stack().db.query<{ id: string; status: string }>('SELECT id, status FROM approvals WHERE task_attempt_id = $1', [attemptId])).rows,
    eventsOf: async (id: string) => (await stack().db.query("SELECT type FROM events WHERE data->>'approvalId' = $1", [id])).rowCount,
  };
}
