/**
 * Managed clones: a project made from a repository URL (a remote, or a bare repository) gets its repository cloned
 * into $ARMADA_HOME/repos/<projectId>. That directory is Armada's: it is removed once no project row owns it and no
 * project uses it as its repository (docs/task-service.md, "Managed clones"). A repository of the user's, used in
 * place, is never under a name Armada gave, and a directory any project uses is never removed.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const managedClonesDir = (home: string): string => path.join(home, 'repos');

/** Where the managed clone of a project lives (whether or not it has one). */
export const managedClonePath = (home: string, projectId: string): string => path.join(managedClonesDir(home), projectId);

/**
 * Whether a project's row says its repository is its managed clone, or will be (a clone still running, or one that
 * failed: git_repo_path is then unset). A project on a repository of the user's has none.
 */
export function hasManagedClone(project: { id: string; git_repo_path: string | null }, home: string): boolean {
  return project.git_repo_path === null || project.git_repo_path === managedClonePath(home, project.id);
}

/** The path with symlinks resolved where it exists (projects store git's top level, which is resolved). */
function canonical(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

const within = (inner: string, outer: string): boolean => {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** Whether `dir` is, holds, or lies inside one of the projects' repositories (`repoPaths`): then it is in use. */
export function usedAsRepository(dir: string, repoPaths: string[]): boolean {
  const d = canonical(dir);
  return repoPaths.some((p) => {
    const r = canonical(p);
    return within(d, r) || within(r, d);
  });
}

/** `.remove-<name>.<pid>-<random>`: a clone being removed (or left half-removed by a process that died). */
export const REMOVAL_CLAIM = /^\.remove-(.+)\.\d+-[0-9a-f]+$/;

/**
 * Removes a managed clone directory: first renamed to a claim beside it (atomic: of two removers only one gets it,
 * and the clone's own name is free at once), then deleted. A claim left by a process that died mid-way is finished by
 * the janitor (activities/git/cloneJanitor.ts). 'absent' when there was nothing to remove (or another remover won).
 */
export async function removeCloneDir(dir: string): Promise<'removed' | 'absent'> {
  const claim = path.join(path.dirname(dir), `.remove-${path.basename(dir)}.${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
  try {
    fs.renameSync(dir, claim);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
  const now = new Date();
  fs.utimesSync(claim, now, now); // a claim being worked on is young to the janitor
  await removeClaim(claim);
  return 'removed';
}

/** Deletes a claimed directory (one already renamed out of the way). */
export async function removeClaim(claim: string): Promise<void> {
  await fs.promises.rm(claim, { recursive: true, force: true, maxRetries: 3 });
}
