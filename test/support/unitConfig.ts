/** A config for unit tests that need one (no servers): the given file config on defaults. */
import os from 'node:os';
import { loadConfig, parseFileConfig, type ArmadaConfig } from '../../lib/config';

export function testConfigFrom(file: Record<string, unknown>): ArmadaConfig {
  const base = loadConfig({ HOME: os.homedir(), ARMADA_HOME: os.tmpdir(), ARMADA_CONFIG: '/nonexistent/armada-config.json' });
  const parsed = parseFileConfig(file, 'test');
  return { ...base, file: parsed, branchPrefix: parsed.branchPrefix ?? 'armada' };
}
