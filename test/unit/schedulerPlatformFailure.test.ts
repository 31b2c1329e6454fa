/**
 * What a scheduler route answers when a source's platform fails during the request (api/scheduler/platformFailure.ts,
 * docs/scheduler.md#error-details-exact): the upstream's failure, a 502, or a 504 when it does not answer in time;
 * an answer of ours, not an internal error. The 502s of real routes: test/integration/schedulerPlatformAnswers.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { classifyError } from '../../api/http/errorHandlers';
import { platformFailure } from '../../api/scheduler/platformFailure';
import { PlatformError, PlatformTimeout, listRemoteFlows } from '../../lib/scheduler/platforms';

test('a platform that never answers the flow list: a 504 naming the call and the timeout; another failure a 502', async () => {
  const hanging = http.createServer(() => undefined); // takes the request, never answers
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    const err = await listRemoteFlows({ sourceType: 'flow-builder', url, apiKey: null }, 200).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformTimeout);
    const answer = platformFailure(err as PlatformError, 'Failed to list flows');
    expect(classifyError(answer)).toMatchObject({ statusCode: 504, message: 'Failed to list flows: GET /api/v1/flows/ timed out after 200 ms', internal: false });
  } finally {
    hanging.closeAllConnections();
    await new Promise((resolve) => hanging.close(resolve));
  }
  const failed = platformFailure(new PlatformError('GET /api/v1/flows/ answered HTTP 500: boom', 500, 'boom'), 'Failed to list flows');
  expect(classifyError(failed)).toMatchObject({ statusCode: 502, message: 'Failed to list flows: GET /api/v1/flows/ answered HTTP 500: boom', internal: false });
});
