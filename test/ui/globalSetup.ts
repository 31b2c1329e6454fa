/**
 * One `armada start` for the whole browser run, as a user runs it: a fresh ARMADA_HOME with embedded PostgreSQL and
 * Temporal, the board built by start itself when stale. Auth is on (ARMADA_TASK_API_KEY plus two users), so every
 * test exercises the bearer header and the WebSocket `?access_token=`; tests put the key in sessionStorage first
 * (fixtures.ts), except the key-prompt test. A scripted agent profile (`scripted`) runs test/fixtures/agents.
 * What the tests need goes to them in environment variables (Playwright passes globalSetup's env to its workers).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ctrlC, startArmada } from '../support/armadaStart';

const { requireTool } = require('../../scripts/test-tools') as { requireTool(command: string): string };

export const UI_KEYS = {
  task: 'ui-test-task-key-0123456789',
  alice: 'ui-test-alice-key-0123456789',
  bob: 'ui-test-bob-key-0123456789',
};

export default async function globalSetup(): Promise<() => Promise<void>> {
  requireTool('chromium'); // one line naming the package when it is missing
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-ui-'));
  const configPath = path.join(home, 'config.json');
  // where tests put repositories the filesystem browser must list (allowed beside the home directory)
  const browseRoot = path.join(home, 'browse');
  fs.mkdirSync(browseRoot);
  // the tests' other repositories: in the run's home, so they go with it (in the temp dir they stayed, ~20 a run)
  const repos = path.join(home, 'repos');
  fs.mkdirSync(repos);
  const agent = path.join(__dirname, '..', 'fixtures', 'agents', 'scripted-agent.js');
  fs.writeFileSync(
    configPath,
    JSON.stringify({
      agents: { scripted: { command: [process.execPath, agent] } },
      filesystem: { allowedPaths: [os.homedir(), browseRoot] },
      multiAgent: { agents: [{ name: 'ui-helper', role: 'answers board questions', llm: 'scripted' }] },
      users: [
        { email: 'alice@example.com', apiKey: UI_KEYS.alice, admin: true },
        { email: 'bob@example.com', apiKey: UI_KEYS.bob },
      ],
    }),
  );
  const t0 = Date.now();
  const armada = await startArmada(home, { ARMADA_CONFIG: configPath, ARMADA_TASK_API_KEY: UI_KEYS.task, ARMADA_API_KEY: 'ui-test-service-key-0123456789' });
  process.stdout.write(`ui: armada start is up in ${((Date.now() - t0) / 1000).toFixed(1)} s on port ${armada.ports.task}\n`);
  process.env.ARMADA_UI_BASE_URL = `http://127.0.0.1:${armada.ports.task}`;
  process.env.ARMADA_UI_HOME = home;
  process.env.ARMADA_UI_BROWSE_ROOT = browseRoot;
  process.env.ARMADA_UI_REPOS = repos;
  process.env.ARMADA_UI_TASK_KEY = UI_KEYS.task;
  process.env.ARMADA_UI_ALICE_KEY = UI_KEYS.alice;
  process.env.ARMADA_UI_BOB_KEY = UI_KEYS.bob;
  return async () => {
    const code = await ctrlC(armada);
    if (code !== 0) process.stdout.write(`ui: armada start exited with ${code}\n${armada.output().slice(-3000)}\n`);
    fs.rmSync(home, { recursive: true, force: true });
  };
}
