/** The removeProjectClone activity: removes a deleted project's managed clone ($ARMADA_HOME/repos/<projectId>). */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { Queryable } from '../../lib/db/pool';
import { existingProjectIds, listProjectRepoPaths } from '../../lib/db/projects';
import { removeCloneDir, usedAsRepository } from '../../lib/projects/managedClones';

export interface RemoveProjectCloneInput {
  projectId: string;
  /** The clone's path as the API made it (managedClonePath of its ARMADA_HOME). */
  dest: string;
}

/** removed; absent (nothing there, or removed already); kept (the project exists, or another project uses the clone) */
export type CloneRemoval = 'removed' | 'absent' | 'kept';

/**
 * Idempotent, and safe to run at any time: a project that exists keeps its clone, and a directory any project uses as
 * its repository is kept (the janitor removes it once none does). Only a path named after the project in a `repos`
 * directory is ever removed, whatever the input says.
 */
export async function removeProjectClone(deps: { db: Queryable }, input: RemoveProjectCloneInput): Promise<CloneRemoval> {
  if (path.basename(input.dest) !== input.projectId || path.basename(path.dirname(input.dest)) !== 'repos') {
    throw ApplicationFailure.nonRetryable(`${input.dest} is not the managed clone of project ${input.projectId}`, 'NotAManagedClone');
  }
  if ((await existingProjectIds(deps.db, [input.projectId])).size) return 'kept';
  if (usedAsRepository(input.dest, await listProjectRepoPaths(deps.db))) return 'kept';
  return removeCloneDir(input.dest);
}
