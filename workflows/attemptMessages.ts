/** Messages of attemptWorkflow (`attempt:<attemptId>`), defined once and imported by the API that sends them. */
import { defineQuery, defineSignal } from '@temporalio/workflow';

export interface FollowUpRequest {
  prompt: string;
  draftId?: string;
  source?: string;
  /**
   * The request's Idempotency-Key (POST /api/attempts/:id/follow-up): the workflow takes a key once and drops a
   * follow-up whose key it has already taken (the last TAKEN_FOLLOW_UP_KEYS of them, carried through
   * continue-as-new). Absent (every follow-up sent before keys existed, the drafts engine's): never dropped.
   */
  idempotencyKey?: string;
}

/** How many follow-up keys an attempt's workflow remembers (the oldest is forgotten first). */
export const TAKEN_FOLLOW_UP_KEYS = 500;

export interface AttemptProgress {
  attemptId: string;
  stage: 'preparing' | 'running' | 'committing' | 'recording' | 'idle' | 'closing' | 'done';
  currentProcessId: string | null;
  processIds: string[];
  pendingFollowUps: number;
  worktreePath: string | null;
  branch: string | null;
  lastOutcome: 'completed' | 'failed' | 'cancelled' | null;
}

/** The attempt workflow of an attempt (one per attempt: starts are idempotent by this id). */
export const attemptWorkflowId = (attemptId: string): string => `attempt:${attemptId}`;

/** Queue a follow-up prompt: follow-ups run FIFO, each as a new agent process resuming the session. */
export const followUpSignal = defineSignal<[FollowUpRequest]>('followUp');
/** Stop one agent process (the API has already marked it stopped; this also drops it if it is still queued). */
export const stopProcessSignal = defineSignal<[{ processId: string }]>('stopProcess');
/** Close the attempt workflow (after a merge with cleanup): no more follow-ups. */
export const closeAttemptSignal = defineSignal('closeAttempt');
export const progressQuery = defineQuery<AttemptProgress>('progress');

/**
 * `paths` of the attempt runs the API starts now (AttemptWorkflowInput.paths: every patch in effect, no markers):
 * 2 = the patches up to `continue-as-new-keeps-messages`; 3 = also `agent-run-records-outcome` (runAgent commits and
 * records the outcome itself) and `follow-up-resumes-in-one` (a follow-up starts with one activity). Each patch names the `paths` from which it is in effect (workflows/attemptWorkflow.ts).
 */
export const ATTEMPT_PATHS = 3;
