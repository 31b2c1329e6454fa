import { multiAgents, multiAgentSettings } from '../../lib/agents/agentRoster';
import { resolveAgentCommand } from '../../lib/agents/agentCommand';
import { buildPrompt } from '../../activities/multiAgent/runAgentTask';
import { formatBytes, formatUptime } from '../../api/agents/format';
import { ConfigError, loadConfig, parseFileConfig, type ArmadaConfig, type FileConfig } from '../../lib/config';
import { normalisePriority, type QueuedAgentTask } from '../../workflows/agentMessages';
import { nextIndex } from '../../workflows/agentWorkflow';

function config(file: FileConfig): ArmadaConfig {
  return { ...loadConfig({ ARMADA_HOME: '/tmp/armada-unit', ARMADA_CONFIG: '/nonexistent/config.json' }), file: parseFileConfig(file, 'config.json') };
}

describe('agent roster', () => {
  test('an llm that names no agent profile is a config error with a clear message', () => {
    const c = config({ agents: { scripted: { command: ['node', 'a.js'] } }, multiAgent: { agents: [{ name: 'a', llm: 'no-such-cli' }] } });
    expect(() => multiAgents(c)).toThrow(ConfigError);
    expect(() => multiAgents(c)).toThrow(/multiAgent\.agents\.0\.llm: "no-such-cli" \(agent "a"\) is not an agent profile; define it under "agents" or use one of: .*\bscripted\b/);
    // the built-in coding-agent CLIs are profiles too (shared with attempts)
    expect(multiAgents(config({ multiAgent: { agents: [{ name: 'b', llm: 'claude' }] } }))[0]?.llm).toBe('claude');
  });

  test('duplicate names are a config error', () => {
    const c = config({ agents: { s: { command: ['x'] } }, multiAgent: { agents: [{ name: 'a', llm: 's' }, { name: 'a', llm: 's' }] } });
    expect(() => multiAgents(c)).toThrow('agent "a" is defined twice');
  });

  test('defaults and profile resolution', () => {
    const c = config({ agents: { s: { command: ['node', 'a.js', '--x'], env: { K: 'v' }, model: 'm1' } }, multiAgent: { agents: [{ name: 'a', llm: 's' }] } });
    expect(multiAgents(c)).toEqual([{ name: 'a', role: '', llm: 's', memory: false, tools: [] }]);
    expect(multiAgentSettings(c)).toEqual({ continueAsNewEvery: 100, taskTimeoutMs: 1_800_000, memoryHits: 3, actorCheckIntervalMs: 3000 });
    expect(resolveAgentCommand(c, 's')).toEqual({ command: 'node', args: ['a.js', '--x'], env: { K: 'v' }, format: 'text', model: 'm1' });
    expect(resolveAgentCommand(c, 'toString')).toBeUndefined();
    expect(() => parseFileConfig({ multiAgent: { continueAsNewEvery: 0 } }, 'config.json')).toThrow(ConfigError);
    expect(() => parseFileConfig({ multiAgent: { actorCheckIntervalMs: 100 } }, 'config.json')).toThrow(ConfigError);
  });
});

describe('agent queue order', () => {
  test('high > normal > low, FIFO within a priority; medium is normal', () => {
    const input: [string, string][] = [['a', 'low'], ['b', 'normal'], ['c', 'high'], ['d', 'medium'], ['e', 'high'], ['f', 'low']];
    const queue = input.map(([taskId, p], seq): QueuedAgentTask => ({ taskId, priority: normalisePriority(p), seq }));
    const order: string[] = [];
    while (queue.length) order.push((queue.splice(nextIndex(queue), 1)[0] as QueuedAgentTask).taskId);
    expect(order).toEqual(['c', 'e', 'b', 'd', 'a', 'f']);
  });
});

describe('formats', () => {
  test('uptime and storage size', () => {
    expect(formatUptime(42_900)).toBe('42s');
    expect(formatUptime(61_000)).toBe('1m 1s');
    expect(formatUptime(3_600_000)).toBe('1h 0m 0s');
    expect(formatUptime(90_061_000)).toBe('1d 1h 1m 1s');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(12_595)).toBe('12.3 KB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.0 MB');
  });

  test('memory prompt format', () => {
    const hit = { id: '1', content: 'line one\nline  two', agent: null, metadata: {}, created_at: new Date('2026-01-02T03:04:05.000Z'), relevance: 0.5 };
    expect(buildPrompt('do it', [])).toBe('do it');
    expect(buildPrompt('do it', [hit, { ...hit, agent: 'ops', content: 'x' }])).toBe(
      'Relevant memory:\n- [shared, 2026-01-02T03:04:05.000Z] line one line two\n- [ops, 2026-01-02T03:04:05.000Z] x\n\nTask:\ndo it',
    );
  });
});
