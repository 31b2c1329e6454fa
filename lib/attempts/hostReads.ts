/**
 * Reads of an attempt's worktree from the API: in place when the worktree is on this host (the all-in-one
 * `armada start`, or a shared volume), else through hostReadWorkflow on the worker of the attempt's host, so API
 * replicas on other hosts see live diffs too (`attempts.worktreeReads`, docs/attempts.md).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { ArmadaConfig } from '../config';
import { AppError } from '../errors';
import { appErrorOfFailure } from '../temporal/appErrorFailure';
import type { TemporalHandle } from '../temporal/client';
import { diffReadFailed, diffTooLarge } from './diffErrors';
import { MAX_REMOTE_DIFF_BYTES, readWorktree, type WorktreeRead, type WorktreeReadResult } from './readWorktree';

export interface HostReadDeps {
  config: ArmadaConfig;
  temporal: TemporalHandle;
}

/** Whether `worktreePath` must be read by its host's worker rather than here. */
function onOtherHost(config: ArmadaConfig, worktreePath: string | null, hostQueue: string | null): boolean {
  if (!worktreePath || !hostQueue) return false;
  if (config.file.attempts?.worktreeReads === 'host') return true;
  return !fs.existsSync(worktreePath);
}

/** Runs `request` here or on the worktree's host; a host whose worker does not answer is a 503. */
export async function readAttemptWorktree(
  deps: HostReadDeps,
  at: { worktreePath: string | null; hostQueue: string | null },
  request: WorktreeRead,
): Promise<WorktreeReadResult> {
  if (!onOtherHost(deps.config, at.worktreePath, at.hostQueue)) return readWorktree(request);
  const timeoutMs = deps.config.file.attempts?.hostReadTimeoutMs ?? 15_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    const handle = await (await deps.temporal.client()).workflow.start('hostReadWorkflow', {
      workflowId: `host-read:${crypto.randomUUID()}`,
      taskQueue: deps.config.temporal.taskQueue,
      args: [{ hostQueue: at.hostQueue as string, request }],
      workflowExecutionTimeout: Math.max(timeoutMs, 1000) * 2,
    });
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`no answer in ${timeoutMs} ms`));
        handle.terminate('the API stopped waiting').catch(() => undefined); // nothing left waiting for that host
      }, timeoutMs);
    });
    return (await Promise.race([handle.result(), timedOut])) as WorktreeReadResult;
  } catch (err) {
    // a read that failed on the host for good (the readWorktree activity sends its AppError)
    const failed = appErrorOfFailure(err);
    if (failed) throw failed;
    throw new AppError(503, 'HOST_UNAVAILABLE', `The worker of the attempt's host (${at.hostQueue}) did not answer; try again when it is up`, {
      hostQueue: at.hostQueue,
      reason: (err as Error).message,
    });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The diff text of a diff read, or the error that it is not one: a diff that does not fit a host read even with every
 * file omitted, or an answer of another kind (a worker of an older version). Never an empty diff in their place.
 */
export function diffText(read: WorktreeReadResult): string {
  if (read.op !== 'diff') throw diffReadFailed("the read on the attempt's host", `it answered a ${read.op} read, not a diff`);
  if (read.truncated) throw diffTooLarge(`even its list of files, without their lines, is past the ${MAX_REMOTE_DIFF_BYTES / 1_000_000} MB a read from the attempt's host carries`);
  return read.text;
}
