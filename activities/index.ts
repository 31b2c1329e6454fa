/**
 * All activities, built from their dependencies (db pool, config, logger) so they are testable without Temporal.
 * Every activity is idempotent: Temporal may run it more than once.
 */
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../lib/config';
import { setCloneResult } from '../lib/db/projects';
import type { Logger } from '../lib/logger';
import type { Metrics } from '../lib/metrics';
import { cloneRepository } from './git/cloneRepository';
import { createAttemptActivities } from './attempts';

export interface ActivityDeps {
  db: Pool;
  config: ArmadaConfig;
  logger: Logger;
  /** The process's registry: activities record armada_* metrics here (served on /metrics). */
  metrics: Metrics;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createAttemptActivities(deps),
    cloneRepository: (input: { url: string; branch: string; dest: string }) => cloneRepository(input),
    async recordCloneResult(input: { projectId: string; ok: boolean; path: string | null; error: string | null }): Promise<void> {
      await setCloneResult(deps.db, input.projectId, input.ok, input.path, input.error);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
