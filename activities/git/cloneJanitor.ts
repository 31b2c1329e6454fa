/**
 * Prunes orphaned managed clones: entries of $ARMADA_HOME/repos named after a project id whose project row no longer
 * exists and that no project uses as its repository. They are what a delete left when its process died between the
 * row delete and the removal, when no worker did the removal in time, or what deletes before the removal existed
 * left. A project's row is written before its clone is started, so a clone without a row is never one being made.
 *
 * Considered: `<id>` (a clone), `<id>.partial` (a clone cut short by a crash; a running clone writes there, so only
 * one untouched for an hour) and `.remove-<id>.<pid>-<random>` (a removal cut short; one untouched for ten minutes).
 * Removal claims the directory by renaming it first (lib/projects/managedClones.ts), so two janitors sharing the
 * directory, or a janitor and removeProjectClone, remove each clone once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Queryable } from '../../lib/db/pool';
import { existingProjectIds, listProjectRepoPaths } from '../../lib/db/projects';
import type { Logger } from '../../lib/logger';
import { REMOVAL_CLAIM, managedClonesDir, removeClaim, removeCloneDir, usedAsRepository } from '../../lib/projects/managedClones';
import { namesIn } from '../../lib/fs/namesIn';

/** A `.partial` untouched this long is not a clone in progress (one git clone is bounded by 30 minutes). */
export const PARTIAL_GRACE_MS = 60 * 60_000;
/** A removal claim untouched this long was left by a process that died. */
export const CLAIM_GRACE_MS = 10 * 60_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface CloneJanitorDeps {
  db: Queryable;
  config: { home: string };
  logger: Logger;
}

export interface PrunedClones {
  /** paths removed */
  removed: string[];
  failed: { path: string; error: string }[];
}

interface Candidate {
  projectId: string;
  dir: string;
  kind: 'clone' | 'partial' | 'claim';
}

function classify(root: string, name: string): Candidate | undefined {
  const dir = path.join(root, name);
  if (UUID.test(name)) return { projectId: name, dir, kind: 'clone' };
  const partial = /^(.+)\.partial$/.exec(name)?.[1];
  if (partial && UUID.test(partial)) return { projectId: partial, dir, kind: 'partial' };
  const claimed = REMOVAL_CLAIM.exec(name)?.[1];
  if (claimed && UUID.test(claimed)) return { projectId: claimed, dir, kind: 'claim' };
  return undefined;
}

/** The directories under repos/ that are managed clones (or their leftovers), past their grace. */
function candidates(root: string, now: number): Candidate[] {
  const names = namesIn(root);
  const found: Candidate[] = [];
  for (const name of names) {
    const c = classify(root, name);
    if (!c) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(c.dir);
    } catch {
      continue; // removed meanwhile
    }
    if (!st.isDirectory()) continue;
    const grace = c.kind === 'partial' ? PARTIAL_GRACE_MS : c.kind === 'claim' ? CLAIM_GRACE_MS : 0;
    if (now - st.mtimeMs >= grace) found.push(c);
  }
  return found;
}

/** One pass over $ARMADA_HOME/repos: removes the managed clones no project owns or uses; a failed entry is skipped. */
export async function pruneOrphanClones(deps: CloneJanitorDeps, opts: { shouldStop?: () => boolean } = {}): Promise<PrunedClones> {
  const result: PrunedClones = { removed: [], failed: [] };
  const found = candidates(managedClonesDir(deps.config.home), Date.now());
  if (!found.length) return result;
  const live = await existingProjectIds(deps.db, [...new Set(found.map((c) => c.projectId))]);
  const used = await listProjectRepoPaths(deps.db);
  for (const c of found) {
    if (opts.shouldStop?.()) break;
    if (live.has(c.projectId) || usedAsRepository(c.dir, used)) continue;
    try {
      if (c.kind === 'claim') await removeClaim(c.dir);
      else if ((await removeCloneDir(c.dir)) === 'absent') continue;
      result.removed.push(c.dir);
      deps.logger.info({ projectId: c.projectId, path: c.dir }, 'orphaned managed clone removed');
    } catch (err) {
      const error = (err as Error).message;
      result.failed.push({ path: c.dir, error });
      deps.logger.warn({ projectId: c.projectId, path: c.dir, err: { message: error } }, 'orphaned managed clone not removed');
    }
  }
  return result;
}
