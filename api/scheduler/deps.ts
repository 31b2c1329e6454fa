/** What every scheduler plugin receives as its options. */
import type { DetailServiceDeps } from '../detailServiceDeps';

export interface SchedulerPluginOptions {
  deps: DetailServiceDeps;
}
