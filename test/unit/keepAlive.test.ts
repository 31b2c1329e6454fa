/**
 * What each heartbeat of activities/keepAlive.ts carries, in Temporal's activity test environment (the beats are the
 * outcome: Temporal keeps the last one's details for the activity's next try). A keepAlive without details of its own
 * inside one with details, as untilPostgresAnswers' is inside the deliver activity's, reports the enclosing details:
 * before, its beats carried none, so a try waiting out a PostgreSQL outage erased the number of the request it had
 * sent (test/integration/webhookPostgresOutage.test.ts has the outage itself).
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { keepAlive } from '../../activities/keepAlive';
import { untilPostgresAnswers } from '../../activities/untilPostgresAnswers';

function activityEnvironment(): { env: MockActivityEnvironment; beats: unknown[] } {
  const now = Date.now();
  const env = new MockActivityEnvironment({ startToCloseTimeoutMs: 120_000, scheduleToCloseTimeoutMs: 0, currentAttemptScheduledTimestampMs: now, scheduledTimestampMs: now });
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  return { env, beats };
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

test('untilPostgresAnswers waiting out an outage inside a keepAlive with details: every beat carries them', async () => {
  const { env, beats } = activityEnvironment();
  let calls = 0;
  const written = await env.run(() =>
    keepAlive(
      () =>
        untilPostgresAnswers(async () => {
          calls++;
          if (calls <= 4) throw refused(); // PostgreSQL answers again after about 3.75 s (pauses of 0.25, 0.5, 1, 2 s)
          return 'row written';
        }),
      { details: () => 3, intervalMs: 2000 },
    ),
  );
  expect(written).toBe('row written');
  expect(beats.length).toBeGreaterThanOrEqual(4); // the wait's beats every second, and the activity's own
  expect(beats.map(String)).toEqual(beats.map(() => '3'));
});

test('the innermost details win; without any, a beat carries none, as before', async () => {
  const { env, beats } = activityEnvironment();
  await env.run(() =>
    keepAlive(() => keepAlive(() => keepAlive(() => new Promise((r) => setTimeout(r, 1100)), { intervalMs: 250 }), { details: () => 'inner', intervalMs: 5000 }), {
      details: () => 'outer',
      intervalMs: 5000,
    }),
  );
  expect(beats.length).toBeGreaterThanOrEqual(3);
  expect(new Set(beats)).toEqual(new Set(['inner']));

  const alone = activityEnvironment();
  await alone.env.run(() => keepAlive(() => new Promise((r) => setTimeout(r, 600)), { intervalMs: 250 }));
  expect(alone.beats.length).toBeGreaterThanOrEqual(2);
  expect(new Set(alone.beats)).toEqual(new Set([undefined]));
});
