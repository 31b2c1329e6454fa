/** pino logging; keys, tokens and secrets are redacted wherever they appear in a logged object. */
import pino, { type Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.api_key',
  '*.apiKey',
  '*.token',
  '*.access_token',
  '*.accessToken',
  '*.secret',
  '*.password',
  '*.databaseUrl',
  'api_key',
  'apiKey',
  'token',
  'access_token',
  'secret',
  'password',
];

export function createLogger(level: string, name = 'armada', destination?: pino.DestinationStream): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
}

export type { Logger };
