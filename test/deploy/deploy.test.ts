/**
 * The deploy/ files are checked by the tools that consume them: promtool (Prometheus config and alert rules),
 * docker-compose (compose file), kubernetes-validate (manifests against the Kubernetes API schemas). `npm test`'s
 * pretest step (scripts/provision-test-tools.js) installs them; a missing one fails its test naming the package. The dashboard and the alerts may only use metrics documented in docs/metrics.md.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

const { requireTool } = require('../../scripts/test-tools') as { requireTool(command: string): string };

interface K8s {
  kind?: string;
  metadata?: { name?: string };
  data?: Record<string, string>;
  spec?: {
    accessModes?: string[];
    volumeClaimTemplates?: unknown;
    template?: { spec?: { volumes?: { name: string; persistentVolumeClaim?: { claimName?: string } }[]; containers?: { volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] }[] } };
  };
}

const ROOT = path.join(__dirname, '..', '..');
const DEPLOY = path.join(ROOT, 'deploy');
jest.setTimeout(120_000);

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const bin = requireTool(cmd); // one line naming the package and its install command when missing
  try {
    return execFileSync(bin, args, { cwd: ROOT, encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

test('promtool accepts the Prometheus config and the alert rules', () => {
  // promtool insists that the task service's key file exists; it is the operator's secret, so point it at a stand-in
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'armada-prom-'));
  const config = fs.readFileSync(path.join(DEPLOY, 'prometheus', 'prometheus.yml'), 'utf8');
  expect(config).toContain('credentials_file: /etc/prometheus/secrets/task-api-key');
  fs.writeFileSync(path.join(tmp, 'task-api-key'), 'stand-in');
  fs.writeFileSync(path.join(tmp, 'prometheus.yml'), config.replace('/etc/prometheus/secrets/task-api-key', path.join(tmp, 'task-api-key')));
  fs.copyFileSync(path.join(DEPLOY, 'prometheus', 'alerts.yml'), path.join(tmp, 'alerts.yml'));
  try {
    expect(run('promtool', ['check', 'config', path.join(tmp, 'prometheus.yml')])).toMatch(/SUCCESS/);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const rules = run('promtool', ['check', 'rules', path.join(DEPLOY, 'prometheus', 'alerts.yml')]);
  expect(rules).toMatch(/SUCCESS: \d+ rules found/);
});

test('docker-compose validates the compose file; the API gets its task key from the environment, and none is a default', () => {
  const keys = { ARMADA_API_KEY: 'x'.repeat(64), ARMADA_ENCRYPTION_KEY: 'y'.repeat(64), ARMADA_TASK_API_KEY: 'z'.repeat(64) };
  const compose = ['-f', path.join(DEPLOY, 'docker-compose.yml'), 'config'];
  expect(run('docker-compose', [...compose, '--quiet'], { ...process.env, ...keys })).toBe('');
  const resolved = run('docker-compose', compose, { ...process.env, ...keys });
  expect(resolved).toMatch(/ARMADA_TASK_API_KEY: z{64}/);
  const env: NodeJS.ProcessEnv = { ...process.env, ARMADA_API_KEY: keys.ARMADA_API_KEY, ARMADA_ENCRYPTION_KEY: keys.ARMADA_ENCRYPTION_KEY };
  delete env.ARMADA_TASK_API_KEY;
  expect(() => run('docker-compose', [...compose, '--quiet'], env)).toThrow(/set ARMADA_TASK_API_KEY/);
});

test('the Temporal server of the compose file reads the dynamic config in deploy/temporal, which turns on eager activity execution', () => {
  const keys = { ARMADA_API_KEY: 'x'.repeat(64), ARMADA_ENCRYPTION_KEY: 'y'.repeat(64), ARMADA_TASK_API_KEY: 'z'.repeat(64) };
  const resolved = run('docker-compose', ['-f', path.join(DEPLOY, 'docker-compose.yml'), 'config'], { ...process.env, ...keys });
  const file = path.join(DEPLOY, 'temporal', 'dynamicconfig.yaml');
  // the service mounts the file where DYNAMIC_CONFIG_FILE_PATH (relative to /etc/temporal) points
  expect(resolved).toContain('DYNAMIC_CONFIG_FILE_PATH: config/dynamicconfig/armada.yaml');
  // docker-compose 1.x prints the short form (`<file>:<target>:ro`), Compose 2 the long one (`source:`, `target:`)
  const source = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  expect(resolved).toMatch(new RegExp(`${source}:/etc/temporal/config/dynamicconfig/armada\\.yaml:ro|source: ${source}\\s+target: /etc/temporal/config/dynamicconfig/armada\\.yaml`));
  const keyValue = fs.readFileSync(file, 'utf8').replace(/^\s*#.*$/gm, '').trim();
  expect(keyValue).toBe('system.enableActivityEagerExecution:\n  - value: true');
});

test('the Kubernetes API takes ARMADA_TASK_API_KEY from a Secret and no manifest carries a key', () => {
  const dir = path.join(DEPLOY, 'kubernetes');
  const api = fs.readFileSync(path.join(dir, 'api.yaml'), 'utf8');
  expect(api).toMatch(/- name: ARMADA_TASK_API_KEY\s+valueFrom:\s+secretKeyRef: \{ name: armada-secrets, key: ARMADA_TASK_API_KEY \}/);
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
    expect([f, fs.readFileSync(path.join(dir, f), 'utf8')]).not.toEqual([f, expect.stringMatching(/^\s*(kind: Secret|stringData:|ARMADA_\w*KEY:)/m)]);
  }
});

test('the Kubernetes manifests validate against the API schemas (strict)', () => {
  const dir = path.join(DEPLOY, 'kubernetes');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => path.join(dir, f));
  const out = run('kubernetes-validate', ['-k', '1.30.0', '--strict', ...files]);
  const kinds = out.split('\n').filter((l) => l.includes('passed'));
  expect(kinds.join('\n')).toMatch(/deployment\/armada-api/);
  expect(kinds.join('\n')).toMatch(/statefulset\/armada-worker/);
  expect(kinds.join('\n')).toMatch(/poddisruptionbudget/);
  expect(out).not.toMatch(/ERROR|failed/i);
});

test("the Kubernetes API and workers share one ReadWriteMany volume at ARMADA_HOME: every pod sees every managed clone and worktree", () => {
  // a managed clone ($ARMADA_HOME/repos/<id>) is made by one worker and used by all of them (worktrees are linked
  // into it), the API reads branches and worktrees in place, and `git worktree prune` in a repository drops the
  // registration of any worktree whose directory it cannot see: per-pod volumes broke all three
  const dir = path.join(DEPLOY, 'kubernetes');
  const docs = fs.readdirSync(dir).filter((f) => f.endsWith('.yaml')).flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(dir, f), 'utf8')).map((d) => d.toJS() as K8s));
  const claim = docs.find((d) => d?.kind === 'PersistentVolumeClaim');
  expect(claim?.spec?.accessModes).toEqual(['ReadWriteMany']);
  const home = docs.find((d) => d?.kind === 'ConfigMap')?.data?.ARMADA_HOME;
  expect(home).toBe('/data');
  for (const name of ['armada-api', 'armada-worker']) {
    const workload = docs.find((d) => d?.metadata?.name === name && (d.kind === 'Deployment' || d.kind === 'StatefulSet'));
    const pod = workload?.spec?.template?.spec;
    const volume = pod?.volumes?.find((v) => v.persistentVolumeClaim?.claimName === claim?.metadata?.name);
    expect([name, volume?.name]).toEqual([name, expect.any(String)]);
    const mount = pod?.containers?.[0]?.volumeMounts?.find((m) => m.name === volume?.name);
    expect([name, mount?.mountPath, mount?.readOnly ?? false]).toEqual([name, home, false]);
    expect([name, workload?.spec?.volumeClaimTemplates]).toEqual([name, undefined]);
  }
});

test('docker-compose: the API and the worker share one volume at ARMADA_HOME, and the worker keeps its host name', () => {
  const compose = parseAllDocuments(fs.readFileSync(path.join(DEPLOY, 'docker-compose.yml'), 'utf8'))[0]?.toJS() as {
    services: Record<string, { volumes?: string[]; hostname?: string }>;
    volumes: Record<string, unknown>;
  };
  const data = (name: string) => compose.services[name]?.volumes?.find((v) => v.split(':')[1]?.split(' ')[0] === '/data');
  expect(data('armada-api')).toBe('armada-data:/data');
  expect(data('armada-worker')).toBe('armada-data:/data');
  expect(Object.keys(compose.volumes)).toContain('armada-data');
  expect(compose.services['armada-worker']?.hostname).toBe('armada-worker');
});

test('the dashboard and the alerts use only documented metrics', () => {
  const documented = new Set(fs.readFileSync(path.join(ROOT, 'docs', 'metrics.md'), 'utf8').match(/armada_[a-z_]+/g) ?? []);
  const used = new Set<string>();
  const dashboard = JSON.parse(fs.readFileSync(path.join(DEPLOY, 'grafana', 'armada-dashboard.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  for (const p of dashboard.panels) for (const t of p.targets) for (const m of t.expr.match(/armada_[a-z_]+/g) ?? []) used.add(m);
  for (const m of fs.readFileSync(path.join(DEPLOY, 'prometheus', 'alerts.yml'), 'utf8').match(/armada_[a-z_]+/g) ?? []) used.add(m);
  const base = (m: string) => m.replace(/_(bucket|sum|count)$/, '');
  expect([...used].map(base).filter((m) => !documented.has(m))).toEqual([]);
  expect(used.size).toBeGreaterThan(5);
});

test('the image builds dist/ in its build stage and runs only the compiled output (no tsx at run time)', () => {
  const dockerfile = fs.readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');
  const [build, runtime] = dockerfile.split(/^FROM .*$/m).slice(1);
  expect(build).toMatch(/RUN npm run build/);
  expect(build).toMatch(/rm -rf node_modules\/tsx/);
  // through its first line (`#!/usr/bin/env -S node --max-semi-space-size=64`): node with the flags every start uses
  expect(runtime).toContain('ENTRYPOINT ["tini", "--", "dist/bin/armada"]');
  expect(fs.readFileSync(path.join(DEPLOY, '..', 'bin', 'armada'), 'utf8').split('\n')[0]).toBe('#!/usr/bin/env -S node --max-semi-space-size=64');
  expect(runtime).toContain('ARMADA_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js');
  // only the compiled output, the pruned node_modules and package.json reach the runtime image: no TypeScript sources
  const copies = runtime?.match(/^COPY .*$/gm) ?? [];
  expect(copies.map((c) => c.split(' ').at(-1))).toEqual(['/app/package.json', '/app/node_modules', '/app/dist']);
  expect(runtime?.split('\n').filter((l) => !l.startsWith('#')).join('\n')).not.toMatch(/tsx/);
});
