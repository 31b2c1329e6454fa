/** Jest runs TypeScript through SWC; one Postgres and one Temporal dev server serve the whole run (test/support/globalSetup.js). */
const { QUIET_PHASE, WORKERS } = require('./test/support/testPhases');

// `npm test` runs two phases (scripts/test.js): ARMADA_TEST_PHASE=quiet runs QUIET_PHASE's files, =rest the others
const phase = process.env.ARMADA_TEST_PHASE;
const escaped = (file) => `<rootDir>/${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: phase === 'quiet' ? QUIET_PHASE.map((f) => `<rootDir>/${f}`) : ['**/*.test.ts'],
  // test/langflow needs a real LangFlow: only `npm run test:langflow` (scripts/langflow-test.js) runs it
  testPathIgnorePatterns: [
    '/node_modules/',
    ...(process.env.ARMADA_LANGFLOW_TEST ? [] : ['/test/langflow/']),
    ...(phase === 'rest' ? QUIET_PHASE.map(escaped) : []),
  ],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
    // ES-module-only dependencies (cookie, used by fastify.inject; typebox) compiled to CommonJS for jest on Node 20
    '^.+\\.m?js$': ['@swc/jest', { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(.+/node_modules/)?(cookie|typebox)/)'],
  globalSetup: '<rootDir>/test/support/globalSetup.js',
  globalTeardown: '<rootDir>/test/support/globalTeardown.js',
  testTimeout: 60000,
  maxWorkers: WORKERS[phase] ?? 2,
  // the longest files start first: on a clean clone jest knows no times and would start them by file size
  testSequencer: '<rootDir>/test/support/testSequencer.js',
  // A worker whose heap has grown past this after a test file is replaced by a fresh one before the next file: each
  // file leaves its module registry and native state (Temporal runtimes, sockets) in the long-lived worker, which
  // otherwise grew to 1.6–2.8 GB RSS by the end of a run (README, "Development").
  workerIdleMemoryLimit: '1GB',
  // How long a worker has to exit at the end before jest kills it and prints "A worker process has failed to exit
  // gracefully" (default 500 ms). Session 48 found no handle left open in the files that end the rest phase (each
  // alone: nothing active 400 ms after jest's end message, gone within 100 ms), and the line came as well from a test
  // that held only memory: a worker that has exited is counted as forced when jest's process, busy or starved at the
  // run's end, reads the timer before the exit (docs/testing.md, "Run time"). A handle that is really left open
  // still gets the line, 3 s later.
  workerGracefulExitTimeout: 3000,
};
