/** Jest runs TypeScript through SWC; one Postgres and one Temporal dev server serve the whole run (test/support/globalSetup.js). */
const { QUIET_PHASE, WORKERS } = require('./test/support/testPhases');

// `npm test` runs two phases (scripts/test.js): ARMADA_TEST_PHASE=quiet runs QUIET_PHASE's files, =rest the others
const phase = process.env.ARMADA_TEST_PHASE;
const escaped = (file) => `<rootDir>/${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

module.exports = {
  // jest's node environment, which names what holds a worker still running after the end (test/support/testEnvironment.js)
  testEnvironment: '<rootDir>/test/support/testEnvironment.js',
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
  // gracefully" (default 500 ms). No test file that ends the rest phase was found leaving a handle open (sessions
  // 47-49, each file watched from inside its worker). The likeliest cause found (session 49, docs/testing.md "Run
  // time"; not reproduced with 3 s): a worker over workerIdleMemoryLimit after its last file is restarted by jest just
  // as the run ends (its memory check races the end message), so the end waits for the old worker's exit with its
  // 1-2 GB heap (V8 frees it after the process's 'exit' event), then for a fresh worker that starts only to get the
  // end message: 0.8 s at load ~13, 1.5-2.8 s at load ~27, with nothing open. A handle really left open (a ref'd timer,
  // socket or child) still gets the line, 10 s later. Since session 51 a worker that still runs 5 s after the end names
  // on stderr what holds it and the files it ran (test/support/testEnvironment.js).
  workerGracefulExitTimeout: 10_000,
};
