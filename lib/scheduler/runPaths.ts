/**
 * The code paths of a scheduler run (workflowRunWorkflow), fixed in its input when it is started: 2 means the
 * patches `lean-run` and `lean-run-v2` are in effect without asking `patched()`, so the run's first workflow task
 * records no marker and no TemporalChangeVersion search-attribute update per patch (four events fewer before its
 * first activity is dispatched: docs/scheduler.md#run-paths). Runs whose input has no `paths` (started by schedules
 * created before it, or recorded histories) ask `patched()` as before. Plain data: imported by the workflow bundle.
 */
export const RUN_PATHS = 2;
