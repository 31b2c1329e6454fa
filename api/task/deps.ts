/** What every task-service plugin receives as its options. */
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../../lib/config';
import type { Logger } from '../../lib/logger';
import type { TemporalHandle } from '../../lib/temporal/client';

export interface TaskServiceDeps {
  db: Pool;
  config: ArmadaConfig;
  temporal: TemporalHandle;
  logger: Logger;
  /** The git `user.email` of the host, the acting user of last resort in local mode. */
  localUser: string;
}

export interface TaskPluginOptions {
  deps: TaskServiceDeps;
}
