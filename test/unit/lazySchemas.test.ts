/**
 * Route schemas are compiled on first use (api/http/lazySchemas.ts): every schema of every service still compiles
 * (what a serving process does before it listens), a deferred validator refuses and coerces as the compiled one does,
 * and a deferred serializer writes what the response schema says. No database or Temporal: no route here reaches one.
 */
import type { FastifyInstance } from 'fastify';
import { Pool } from 'pg';
import { compileAllSchemas } from '../../api/http/lazySchemas';
import { createBaseApp } from '../../api/http/baseApp';
import { buildService, SERVICE_NAMES } from '../../api/services';
import { resolveKeys } from '../../lib/keys';
import { createLogger } from '../../lib/logger';
import { createMetrics, createServiceMetrics } from '../../lib/metrics';
import type { TemporalHandle } from '../../lib/temporal/client';
import { testConfigFrom } from '../support/unitConfig';

const logger = createLogger('silent');

describe('route schemas compiled on first use', () => {
  // a pool on a port where nothing listens: building an app opens no connection
  const db = new Pool({ connectionString: 'postgres://nobody@127.0.0.1:9/none' });
  afterAll(() => db.end());

  test.each(SERVICE_NAMES)('every schema of the %s service compiles, once', async (name) => {
    const config = testConfigFrom({});
    const app = await buildService(name, { db, config, keys: resolveKeys(config), temporal: {} as TemporalHandle, logger, metrics: createServiceMetrics() });
    try {
      await app.ready();
      const compiled = compileAllSchemas(app);
      // every service documents dozens of operations (the task service hundreds of request parts and answers)
      expect(compiled).toBeGreaterThan(name === 'task' ? 500 : 20);
      expect(compileAllSchemas(app)).toBe(0);
    } finally {
      await app.close();
    }
  });

  describe('a deferred validator and serializer', () => {
    let app: FastifyInstance;
    beforeAll(async () => {
      app = createBaseApp({ service: 'agents', logger, metrics: createMetrics(), version: '0.0.0', errorStyle: 'detail' });
      app.post(
        '/echo/:n',
        {
          schema: {
            params: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] },
            querystring: { type: 'object', properties: { tag: { type: 'string', maxLength: 3 } } },
            body: { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'], additionalProperties: false },
            response: { 200: { type: 'object', properties: { n: { type: 'integer' }, name: { type: 'string' }, tag: { type: 'string' } } } },
          },
        },
        async (request) => {
          const { n } = request.params as { n: number };
          const { tag } = request.query as { tag?: string };
          // `secret` is not in the response schema: the serializer leaves it out
          return { n, name: (request.body as { name: string }).name, ...(tag ? { tag } : {}), secret: 'not shown' };
        },
      );
      await app.ready();
    });
    afterAll(() => app.close());

    test('coerces a path integer, and the answer has only what the response schema names', async () => {
      const res = await app.inject({ method: 'POST', url: '/echo/7?tag=abc', payload: { name: 'x' } });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('{"n":7,"name":"x","tag":"abc"}');
    });

    test('refuses each part in the service words, the same way on every call', async () => {
      for (let i = 0; i < 2; i++) {
        const body = await app.inject({ method: 'POST', url: '/echo/7', payload: { name: 'x', extra: 1 } });
        expect([body.statusCode, body.json().detail]).toEqual([400, expect.stringContaining('extra')]);
        const params = await app.inject({ method: 'POST', url: '/echo/0', payload: { name: 'x' } });
        expect([params.statusCode, params.json().detail]).toEqual([400, expect.stringContaining('n')]);
        const query = await app.inject({ method: 'POST', url: '/echo/7?tag=abcd', payload: { name: 'x' } });
        expect([query.statusCode, query.json().detail]).toEqual([400, expect.stringContaining('tag')]);
        const unknown = await app.inject({ method: 'POST', url: '/echo/7?tga=a', payload: { name: 'x' } });
        expect([unknown.statusCode, unknown.json().detail]).toEqual([400, expect.stringContaining('it takes tag')]);
      }
      const ok = await app.inject({ method: 'POST', url: '/echo/2', payload: { name: 'y' } });
      expect(ok.body).toBe('{"n":2,"name":"y"}');
    });
  });
});
