/** The banner of `armada start`: a JSON line without the key for machines, text (the key once) for a terminal. */
import { readyBanner, stoppedBanner, type ReadyInfo } from '../../cli/startBanner';

const KEY = '5f0c1d2e3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e';
const info: ReadyInfo = {
  version: '0.1.0',
  startupSeconds: 12.34,
  home: '/data/armada',
  addresses: { task: 'http://127.0.0.1:8887', scheduler: 'http://127.0.0.1:8883' },
  temporal: { address: '127.0.0.1:7233', uiUrl: 'http://127.0.0.1:8233' },
  postgresPort: 54329,
  apiKeyFile: '/data/armada/api-key',
  generatedApiKey: KEY,
};

test('JSON logs: one JSON line in the log shape, with the addresses and the key file, never the key', () => {
  const text = readyBanner(info, { format: 'json', tty: false });
  expect(text.endsWith('\n')).toBe(true);
  expect(text.trimEnd().split('\n')).toHaveLength(1);
  expect(JSON.parse(text)).toEqual({
    level: 30,
    time: expect.any(Number),
    event: 'ready',
    version: '0.1.0',
    startupSeconds: 12.3,
    home: '/data/armada',
    addresses: info.addresses,
    temporal: info.temporal,
    postgres: { embedded: true, port: 54329 },
    apiKeyFile: '/data/armada/api-key',
    apiKeyGenerated: true,
    msg: 'armada is up',
  });
  // ARMADA_LOG_FORMAT=json on a terminal: still no key in the stream
  expect(readyBanner(info, { format: 'json', tty: true })).not.toContain(KEY);
  expect(JSON.parse(stoppedBanner({ format: 'json', tty: false }))).toMatchObject({ level: 30, event: 'stopped', msg: 'armada stopped' });
});

test('a terminal: the text banner, the generated key shown once; pretty logs on a pipe: the file, not the key', () => {
  const tty = readyBanner(info, { format: 'pretty', tty: true });
  expect(tty).toMatch(/^armada 0\.1\.0 is up in 12\.3 s \(data in \/data\/armada\)\n/);
  expect(tty).toContain('  task           http://127.0.0.1:8887\n');
  expect(tty).toContain(`shown once, stored in /data/armada/api-key):\n    ${KEY}\n`);
  expect(tty.endsWith('Press Ctrl-C to stop.\n')).toBe(true);
  const piped = readyBanner(info, { format: 'pretty', tty: false });
  expect(piped).not.toContain(KEY);
  expect(piped).toContain('generated, stored in /data/armada/api-key');
  expect(readyBanner({ ...info, generatedApiKey: undefined }, { format: 'pretty', tty: true })).not.toContain('API key');
  expect(stoppedBanner({ format: 'pretty', tty: true })).toBe('armada stopped\n');
});
