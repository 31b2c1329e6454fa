/** The Temporal client for scheduler routes, or a 503 `{detail}` naming the operation when Temporal cannot be reached. */
import type { Client } from '@temporalio/client';
import { AppError } from '../../lib/errors';
import type { DetailServiceDeps } from '../detailServiceDeps';

export const temporalUnavailable = (what: string) => new AppError(503, 'SERVICE_UNAVAILABLE', `${what}: Temporal is unavailable`);

/** The client, or a 503 with a clear detail when Temporal cannot be reached. */
export async function temporalClient(deps: DetailServiceDeps, what: string): Promise<Client> {
  try {
    return await deps.temporal.client();
  } catch {
    throw temporalUnavailable(what);
  }
}
