/**
 * The failure type of a scheduler task's try that stopped because its execution was stopped (POST …/stop) or deleted,
 * as its execution row said (activities/scheduler/taskStop.ts). The run records it like a cancellation. Plain data:
 * imported by the workflow bundle.
 */
export const EXECUTION_STOPPED = 'ExecutionStopped';
