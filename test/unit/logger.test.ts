/** Log formats: JSON lines, or human lines (time, level, component, message) on a TTY or with ARMADA_LOG_FORMAT=pretty. */
import { ConfigError, loadConfig } from '../../lib/config';
import { createLogger, resolveLogFormat } from '../../lib/logger';

function capture(format: 'pretty' | 'json') {
  const lines: string[] = [];
  const logger = createLogger('info', 'armada', { write: (l: string) => void lines.push(...l.split('\n').filter(Boolean)) }, format);
  return { logger, lines };
}

test('pretty: one human line per entry, secrets still redacted, errors with their stack indented', () => {
  const { logger, lines } = capture('pretty');
  logger.child({ component: 'temporal' }).warn({ pid: 42, apiKey: 'sekrit', detail: 'two words' }, 'stopping a server');
  logger.child({ service: 'task' }).info('Server listening at http://127.0.0.1:8887');
  logger.error({ err: new Error('boom') }, 'worker failed');
  expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}\[temporal\] stopping a server apiKey=\[redacted\] detail="two words"$/);
  expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[task\] Server listening at http:\/\/127\.0\.0\.1:8887$/);
  expect(lines[2]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} ERROR \[armada\] worker failed err="Error: boom"$/);
  expect(lines[3]).toMatch(/^ {4}at /);
  expect(lines.join('\n')).not.toContain('sekrit');
});

test('json: pino lines', () => {
  const { logger, lines } = capture('json');
  logger.info({ apiKey: 'sekrit' }, 'hello');
  expect(JSON.parse(lines[0])).toMatchObject({ level: 30, msg: 'hello', apiKey: '[redacted]' });
});

test('credentials in URLs are redacted in messages and errors (docs/security.md)', () => {
  const { logger, lines } = capture('json');
  logger.warn({ url: 'https://user:s3cret@host/x.git' }, 'cloning https://t0ken@github.com/a/b.git');
  logger.error({ err: new Error("fatal: unable to access 'http://user:s3cret@127.0.0.1:1/x.git/'") }, 'clone failed');
  expect(lines.join('\n')).not.toMatch(/s3cret|t0ken/);
  expect(JSON.parse(lines[0] as string)).toMatchObject({ msg: 'cloning https://***@github.com/a/b.git', url: 'https://user:***@host/x.git' });
  expect(JSON.parse(lines[1] as string).err.message).toBe("fatal: unable to access 'http://user:***@127.0.0.1:1/x.git/'");
});

test('ARMADA_LOG_FORMAT wins; otherwise pretty on a TTY and JSON elsewhere; bad values name the key', () => {
  expect(resolveLogFormat(undefined, true)).toBe('pretty');
  expect(resolveLogFormat(undefined, false)).toBe('json');
  expect(resolveLogFormat('json', true)).toBe('json');
  expect(resolveLogFormat('pretty', false)).toBe('pretty');
  expect(loadConfig({ ARMADA_HOME: '/tmp/h', ARMADA_LOG_FORMAT: 'pretty', ARMADA_CONFIG: '/nonexistent.json' }).logFormat).toBe('pretty');
  expect(loadConfig({ ARMADA_HOME: '/tmp/h', ARMADA_CONFIG: '/nonexistent.json' }).logFormat).toBeUndefined();
  expect(() => loadConfig({ ARMADA_HOME: '/tmp/h', ARMADA_LOG_FORMAT: 'fancy', ARMADA_CONFIG: '/nonexistent.json' })).toThrow(ConfigError);
  expect(() => loadConfig({ ARMADA_HOME: '/tmp/h', ARMADA_LOG_FORMAT: 'fancy', ARMADA_CONFIG: '/nonexistent.json' })).toThrow(/^ARMADA_LOG_FORMAT: "fancy"/);
});

test('ARMADA_TOOLS_DIR defaults to $ARMADA_HOME/tools', () => {
  expect(loadConfig({ ARMADA_HOME: '/tmp/h', ARMADA_CONFIG: '/nonexistent.json' }).toolsDir).toBe('/tmp/h/tools');
  expect(loadConfig({ ARMADA_HOME: '/tmp/h', ARMADA_TOOLS_DIR: '/opt/t', ARMADA_CONFIG: '/nonexistent.json' }).toolsDir).toBe('/opt/t');
});
