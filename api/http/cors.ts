/**
 * CORS for every service through @fastify/cors. `cors.origins` (config file) or ARMADA_CORS_ORIGINS (comma-separated)
 * restricts the allowed origins; `*` in the list allows all. Without configuration the scheduler, agents and traces
 * services (X-API-Key protected) allow all origins as the spec says; the task service, which runs without
 * authentication locally and can list directories, allows only loopback origins so an arbitrary web page open in
 * the user's browser cannot read it.
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/;

export type CorsDefault = 'all' | 'loopback';

export function corsOrigin(configured: string[] | undefined, fallback: CorsDefault): string | string[] | RegExp {
  if (configured && configured.length > 0) return configured.includes('*') ? '*' : configured;
  return fallback === 'all' ? '*' : LOOPBACK_ORIGIN;
}

export async function installCors(app: FastifyInstance, configured: string[] | undefined, fallback: CorsDefault): Promise<void> {
  await app.register(cors, {
    origin: corsOrigin(configured, fallback),
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-API-Key', 'X-User-Email', 'X-Request-Id', 'Cache-Control', 'Pragma'],
    exposedHeaders: ['X-Request-Id', 'X-Armada-Cache', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
    maxAge: 600,
  });
}
