/** `armada start`'s stop: every part is stopped in order, and a part that never stops does not hold the rest up. */
import { runShutdownSteps } from '../../lib/runtime/shutdownSteps';

function recordingLogger() {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (_obj: unknown, msg?: string) => void warnings.push(msg ?? '') } };
}

test('the steps run one after the other, in order', async () => {
  const { logger, warnings } = recordingLogger();
  const order: string[] = [];
  const step = (name: string, ms: number) => ({
    name,
    limitMs: 1000,
    run: () => new Promise<void>((r) => setTimeout(() => r(void order.push(`${name} done`)), ms)).then(() => undefined),
  });
  const late = await runShutdownSteps(logger as never, [step('http', 30), step('workers', 1), step('servers', 10)]);
  expect(order).toEqual(['http done', 'workers done', 'servers done']);
  expect(late).toEqual([]);
  expect(warnings).toEqual([]);
});

test('a step that never finishes is named in a warning after its limit, and the next steps still run', async () => {
  const { logger, warnings } = recordingLogger();
  const ran: string[] = [];
  const t0 = Date.now();
  const late = await runShutdownSteps(logger as never, [
    { name: 'http', limitMs: 200, run: () => new Promise(() => undefined) }, // never settles
    { name: 'postgres pool', limitMs: 200, run: async () => void ran.push('pool') },
    { name: 'postgres and temporal', limitMs: 200, run: async () => void ran.push('servers') },
  ]);
  const took = Date.now() - t0;
  expect(late).toEqual(['http']);
  expect(ran).toEqual(['pool', 'servers']);
  expect(warnings).toEqual(['shutdown: http did not stop within 0.2 s; going on without it']);
  expect(took).toBeGreaterThanOrEqual(190);
});

test('a step that fails is named in a warning, and neither it nor a step with nothing to stop stops the others', async () => {
  const { logger, warnings } = recordingLogger();
  const ran: string[] = [];
  const late = await runShutdownSteps(logger as never, [
    { name: 'workers', limitMs: 1000, run: () => undefined }, // no workers were started
    { name: 'temporal client', limitMs: 1000, run: () => Promise.reject(new Error('connection already closed')) },
    {
      name: 'dependency probes',
      limitMs: 1000,
      run: () => {
        throw new Error('thrown synchronously');
      },
    },
    { name: 'postgres and temporal', limitMs: 1000, run: async () => void ran.push('servers') },
  ]);
  expect(late).toEqual([]);
  expect(warnings).toEqual([
    'shutdown: temporal client failed (connection already closed); going on',
    'shutdown: dependency probes failed (thrown synchronously); going on',
  ]);
  expect(ran).toEqual(['servers']);
});
