/**
 * A small fixed-window rate limiter (no package): `perMinutePerIp` counts requests per client IP per minute,
 * `perHourPerUser` per acting user per hour. State lives in this process's memory, so with N API replicas a client
 * gets up to N× the limit; put a shared limiter in front of the replicas when that matters.
 * Every limited response carries X-RateLimit-Limit/-Remaining/-Reset (Unix seconds) of the tightest window.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from './envelope';

interface Window {
  count: number;
  resetAt: number;
}

/** Counters of one fixed window length; expired windows are dropped as the map is swept. */
export class FixedWindowCounter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Counts one hit for key; returns the window after counting. */
  hit(key: string, now: number): Window {
    if (now - this.lastSweep > this.windowMs) {
      for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
      this.lastSweep = now;
    }
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + this.windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return w;
  }

  get size(): number {
    return this.windows.size;
  }
}

const EXEMPT = new Set(['/health', '/health/live', '/metrics']);

export interface WindowLimitOptions {
  limit: number;
  windowMs: number;
  /** The key a request counts against (client IP, acting user). */
  keyOf: (request: FastifyRequest) => string;
  version: string;
  now?: () => number;
}

/**
 * One fixed-window limit as an onRequest hook. Several may be installed (per IP before authentication, so key
 * guessing is limited too; per user after it); the headers always show the tightest window seen so far.
 */
export function installWindowLimit(app: FastifyInstance, opts: WindowLimitOptions): void {
  const counter = new FixedWindowCounter(opts.limit, opts.windowMs);
  const now = opts.now ?? Date.now;
  app.addHook('onRequest', async (request, reply) => {
    if (EXEMPT.has(request.url.split('?')[0] ?? '')) return;
    const t = now();
    const w = counter.hit(opts.keyOf(request), t);
    const remaining = Math.max(0, opts.limit - w.count);
    const shown = reply.getHeader('x-ratelimit-remaining');
    if (shown === undefined || remaining < Number(shown)) {
      reply.header('x-ratelimit-limit', opts.limit);
      reply.header('x-ratelimit-remaining', remaining);
      reply.header('x-ratelimit-reset', Math.ceil(w.resetAt / 1000));
    }
    if (w.count > opts.limit) {
      reply.header('retry-after', Math.max(1, Math.ceil((w.resetAt - t) / 1000)));
      return reply.code(429).send(errorBody(opts.version, 'RATE_LIMIT', 'Too many requests: rate limit exceeded, retry after X-RateLimit-Reset'));
    }
  });
}
