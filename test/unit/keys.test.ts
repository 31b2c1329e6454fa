import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../lib/config';
import { resolveKeys } from '../../lib/keys';

let home: string;
const config = () => loadConfig({ HOME: os.homedir(), ARMADA_HOME: home, ARMADA_CONFIG: '/nonexistent/armada-config.json' });

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-keys-'));
});
afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

test('a first start generates the API and encryption keys (0600), and the next start reads the same ones', () => {
  const first = resolveKeys(config());
  expect(first.generatedApiKey).toMatch(/^[0-9a-f]{64}$/);
  for (const name of ['api-key', 'encryption-key']) {
    const file = path.join(home, name);
    expect(fs.readFileSync(file, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  }
  const again = resolveKeys(config());
  expect(again.generatedApiKey).toBeUndefined();
  expect(again.scheduler).toBe(first.scheduler);
  expect(again.encryption.equals(first.encryption)).toBe(true);
  // no temp files left beside them
  expect(fs.readdirSync(home).sort()).toEqual(['api-key', 'encryption-key']);
});

test('an empty key file (a crash before its bytes reached the disk, or emptied by hand) is refused, not used as a key', () => {
  resolveKeys(config());
  fs.writeFileSync(path.join(home, 'api-key'), '\n');
  // an empty API key would match an empty X-API-Key header; refuse to start and say what to do
  expect(() => resolveKeys(config())).toThrow(ConfigError);
  expect(() => resolveKeys(config())).toThrow(`${path.join(home, 'api-key')} is empty: delete it to generate a new key (clients then need the new one), or restore it`);
  fs.rmSync(path.join(home, 'api-key'));
  fs.writeFileSync(path.join(home, 'encryption-key'), '');
  expect(() => resolveKeys(config())).toThrow(/encryption-key is empty: restore it from a backup; deleting it generates a new key, and the secrets stored with the old one \(source API keys, code-host tokens, webhook secrets, repository URL credentials\) can no longer be read/);
});
