/** What every task-service plugin receives as its options. */
import type { Pool } from 'pg';
import type { ArmadaConfig } from '../../lib/config';
import type { EventListener } from '../../lib/events/listener';
import type { LogFeed } from '../../lib/events/logFeed';
import type { ResolvedKeys } from '../../lib/keys';
import type { Logger } from '../../lib/logger';
import type { Metrics } from '../../lib/metrics';
import type { TemporalHandle } from '../../lib/temporal/client';
import type { BackgroundWork } from '../../lib/runtime/background';
import type { DependencyState } from '../../lib/runtime/dependencies';

export interface TaskServiceDeps {
  db: Pool;
  config: ArmadaConfig;
  temporal: TemporalHandle;
  logger: Logger;
  /** API keys (task key: bearer auth when set) and the encryption key for secrets at rest. */
  keys: ResolvedKeys;
  /** The git `user.email` of the host, the acting user of last resort in local mode. */
  localUser: string;
  /** What is down right now (`armada start`, `armada api`); unset = not tracked. */
  dependencies?: DependencyState;
}

/** Deps plus what buildTaskApp creates per app: the event listener and log feed (streams) and the metrics registry. */
export interface TaskAppDeps extends TaskServiceDeps {
  events: EventListener;
  logs: LogFeed;
  metrics: Metrics;
  /** Work requests start without waiting for it (attempt start confirmations); the app's close waits for it. */
  background: BackgroundWork;
}

export interface TaskPluginOptions {
  deps: TaskAppDeps;
}
