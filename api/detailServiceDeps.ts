/** What the scheduler, agents and traces services receive. */
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../lib/config';
import type { ResolvedKeys } from '../lib/keys';
import type { Logger } from '../lib/logger';
import type { Metrics } from '../lib/metrics';
import type { TemporalHandle } from '../lib/temporal/client';
import type { DependencyState } from '../lib/runtime/dependencies';

export interface DetailServiceDeps {
  db: Pool;
  config: ArmadaConfig;
  keys: ResolvedKeys;
  temporal: TemporalHandle;
  logger: Logger;
  metrics: Metrics;
  /** What is down right now (`armada start`, `armada api`); unset = not tracked. */
  dependencies?: DependencyState;  /** Another listener of a service this process already runs (the scheduler's second port): no background work. */
  secondListener?: boolean;
}
