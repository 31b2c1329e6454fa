'use strict';
// The order in which jest starts the test files (jest.config.js `testSequencer`; docs/testing.md, "Order").
//
// jest's own order is: files that failed in this machine's last run, then the longest in that run, and for a file it
// has no time for (every file of a clean clone, so every CI run) the biggest file first. File size says little here:
// the contract test and the browser test are small files that run for minutes, and started last they kept one
// worker busy for ~2 minutes after the other had finished (CI run of session 34: 1207 s of jest for ~1160 s of work
// per worker). So the files below, the longest of a CI run, start first, in this order; the rest follow in jest's
// own order. The browser test (1-1.5 s latency budgets) starts first, beside files that mostly wait (PostgreSQL and
// Temporal stalls, a 75 s outage), and the contract test, which keeps the CPU busy (schemathesis), follows them and
// starts its runs only once the browser test has ended (test/support/quietTurns.ts; session 35: beside the CPU-heavy
// files a follow-up's run did not show in 30 s once). Refresh the list from a CI log when it no longer names the
// longest files:
//   grep -oE "[^ ]+\.test\.ts \([0-9.]+ s\)" <log> | sort -t'(' -k2 -rn | head -15
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const LONGEST_FIRST = [
  // the quiet phase (3 workers): the browser test beside two waiting files, then the contract test, which waits for
  // the browser test to end (test/support/quietTurns.ts), and the other two waiting files
  'test/ui/browser.test.ts',
  'test/integration/schedulerStalls.test.ts',
  'test/e2e/dependencyFaults.test.ts',
  'test/contract/schemathesis.test.ts',
  'test/integration/attemptWorkerTakeover.test.ts',
  'test/integration/approvalExpiryOutage.test.ts',
  // the rest phase, by their time in ci47a (session 47)
  'test/integration/schedulerFlowOnce.test.ts',
  'test/integration/schedulerTemporalDeadlines.test.ts',
  'test/e2e/provision.test.ts',
  'test/integration/attemptPostgresRestart.test.ts',
  'test/integration/schedulerWorkflows.test.ts',
  // session 50: ~110 s alone (armada api and worker spawned, every secret path exercised); ~80 s since session 51
  'test/integration/secretsNowhere.test.ts',
  // session 51: the same with ARMADA_LAUNCHER=off (its worker sweeps the orphaned clone at start, then the retry)
  'test/integration/projectCloneWorkerKillLauncherOff.test.ts',
  // session 50: ~73 s alone (two starts of the suite, the lost agent run's 10 s heartbeat timeout, a re-run)
  'test/e2e/startKilledAgent.test.ts',
  'test/integration/schedulerWorkerOutage.test.ts',
  'test/e2e/compiledBuild.test.ts',
  'test/integration/webhookPostgresOutage.test.ts',
  'test/integration/attemptFailures.test.ts',
  'test/integration/probeConnectionsFrozen.test.ts',
  'test/fleet/fleet.test.ts',
  'test/integration/webhookOldRetryPolicy.test.ts',
  'test/integration/multiAgentFaults.test.ts',
  'test/integration/webhookBreaker.test.ts',
  // session 51: ~40 s alone (a worker killed mid-clone waits out the lost try's heartbeat timeout, 15 s there)
  'test/integration/projectCloneWorkerKill.test.ts',
  // session 51: ~48 s alone (its dev server killed twice, the second time for 12 s across a schedule's due times)
  'test/integration/schedulerTemporalKill.test.ts',
  // session 51: ~70 s alone (its own dev server on a tmpfs it fills; the accepted attempts finish once space is back)
  'test/integration/temporalDiskFull.test.ts',
  // session 52: ~65 s alone (its own PostgreSQL's initdb, armada migrate cut and run again, then armada start cut
  // and restarted on the same data directory)
  'test/e2e/migratePostgresKilled.test.ts',
];

class LongestFirstSequencer extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const rank = (test) => {
      const i = LONGEST_FIRST.indexOf(path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/'));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    // a stable sort: the files not listed keep jest's order among themselves
    return ordered
      .map((test, i) => ({ test, i, rank: rank(test) }))
      .sort((a, b) => a.rank - b.rank || a.i - b.i)
      .map((x) => x.test);
  }
}

module.exports = LongestFirstSequencer;
module.exports.LONGEST_FIRST = LONGEST_FIRST;
