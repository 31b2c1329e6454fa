'use strict';
// `npm test` runs jest twice (scripts/test.js; docs/testing.md, "Run time"):
//  - the quiet phase, 3 workers (see below): the two files that measure latency while keeping the CPU busy
//    themselves (the browser test: 1-1.5 s budgets; the contract test: schemathesis' response-time check), beside
//    long files that mostly wait on real time (stalls, an outage, a heartbeat timeout), which leave them the CPU;
//  - the rest, 4 workers: files that mostly wait on real time left 33-69% of the 2 cores idle with 2 workers (session
//    39's vmstat), so more run beside them. A fourth (sessions 41 and 43) saved ~3 minutes but failed
//    schedulerTemporalDeadlines' resync case once in 4 runs; session 44 found the test proxy re-sending a held
//    connection's old bytes at its second stall (test/support/tcpProxy.ts) and fixed it.
// Session 47 gave the quiet phase a third worker: the contract test there starts schemathesis only once the browser
// test has ended (test/support/quietTurns.ts), so the two CPU-heavy files still never run side by side, and the four
// waiting files share the other workers (the phase was the browser test, then the contract test, on one worker, ~440 s).
// `npx jest <file>` and `npm test -- <args>` run one jest as before (all files in one phase, 2 workers).
const QUIET_PHASE = [
  'test/ui/browser.test.ts',
  'test/integration/schedulerStalls.test.ts',
  'test/e2e/dependencyFaults.test.ts',
  'test/contract/schemathesis.test.ts',
  'test/integration/attemptWorkerTakeover.test.ts',
  'test/integration/approvalExpiryOutage.test.ts',
];

/** jest workers per phase; `undefined` (one run of everything) keeps 2 */
const WORKERS = { quiet: 3, rest: 4 };

module.exports = { QUIET_PHASE, WORKERS };
