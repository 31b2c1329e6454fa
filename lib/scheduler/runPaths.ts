/**
 * The code paths of a scheduler run (workflowRunWorkflow), fixed in its input when it is started: 2 means the
 * patches `lean-run` and `lean-run-v2` are in effect without asking `patched()`, so the run's first workflow task
 * records no marker and no TemporalChangeVersion search-attribute update per patch (four events fewer before its
 * first activity is dispatched: docs/scheduler.md#run-paths); 3 adds `local-start` (the start, and a first flow's
 * request, inside the first workflow task: docs/scheduler.md#local-start). Runs whose input has fewer paths (started
 * by schedules created before, or recorded histories) ask `patched()` for the rest. Plain data, no imports: read by the
 * API and the schedules, not by the workflow bundle (the workflow names each patch's paths itself).
 */
export const RUN_PATHS = 3;
