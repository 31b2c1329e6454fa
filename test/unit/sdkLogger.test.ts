/** The Temporal SDK's own log lines: an activity's failure is logged with its reason, not as `"error":{}`. */
import { ApplicationFailure } from '@temporalio/common';
import { createLogger } from '../../lib/logger';
import { sdkLogger } from '../../lib/temporal/sdkLogger';

function capture(format: 'pretty' | 'json') {
  const lines: string[] = [];
  const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(...l.split('\n').filter(Boolean)) }, format);
  return { log: sdkLogger(logger), lines };
}

test('json: the failure the SDK passes as `error` is serialised with its type and message', () => {
  const { log, lines } = capture('json');
  // what @temporalio/worker logs when an activity throws (lib/activity.js: `{ error, durationMs }`)
  log.warn('Activity failed', { error: ApplicationFailure.create({ type: 'CLONE_FAILED', message: 'git clone failed: repository not found' }), durationMs: 12, activityType: 'cloneRepository' });
  const line = JSON.parse(lines[0] as string);
  expect(line).toMatchObject({ msg: 'Activity failed', component: 'temporal-sdk', durationMs: 12, activityType: 'cloneRepository' });
  expect(line.err).toMatchObject({ type: 'ApplicationFailure', message: 'git clone failed: repository not found' });
  expect(line.error).toBeUndefined();
});

test('pretty: the reason is on the line; metadata without an error is logged as it is', () => {
  const { log, lines } = capture('pretty');
  log.warn('Activity failed', { error: new Error('connect ECONNREFUSED 127.0.0.1:5432') });
  expect(lines[0]).toContain('Activity failed err="Error: connect ECONNREFUSED 127.0.0.1:5432"');
  log.warn('Worker state changed', { state: 'DRAINING', error: 'not an Error' });
  expect(lines.find((l) => l.includes('Worker state changed'))).toContain('error="not an Error"');
});
