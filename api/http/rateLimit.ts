/**
 * A small fixed-window rate limiter (no package): `perMinutePerIp` counts requests per client IP per minute,
 * `perHourPerUser` per acting user per hour. State lives in this process's memory, so with N API replicas a client
 * gets up to N× the limit; put a shared limiter in front of the replicas when that matters.
 * Every limited response carries X-RateLimit-Limit/-Remaining/-Reset (Unix seconds) of the tightest window.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorBody } from './envelope';

export interface RateLimitOptions {
  perMinutePerIp?: number;
  perHourPerUser?: number;
  version: string;
  /** The user a request counts against (after authentication). */
  userOf: (request: FastifyRequest) => string;
  /** Injected clock for tests. */
  now?: () => number;
}

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

const EXEMPT = new Set(['/health', '/metrics']);

export function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): void {
  const limiters: { counter: FixedWindowCounter; key: (r: FastifyRequest) => string }[] = [];
  if (opts.perMinutePerIp) limiters.push({ counter: new FixedWindowCounter(opts.perMinutePerIp, 60_000), key: (r) => `ip:${r.ip}` });
  if (opts.perHourPerUser) limiters.push({ counter: new FixedWindowCounter(opts.perHourPerUser, 3_600_000), key: (r) => `user:${opts.userOf(r)}` });
  if (limiters.length === 0) return;
  const now = opts.now ?? Date.now;
  // onRequest, added after authentication, so the per-user window counts the authenticated user.
  app.addHook('onRequest', async (request, reply) => {
    if (EXEMPT.has(request.url.split('?')[0] ?? '')) return;
    const t = now();
    let tightest: { limit: number; remaining: number; resetAt: number } | undefined;
    let exceeded = false;
    for (const l of limiters) {
      const w = l.counter.hit(l.key(request), t);
      const remaining = Math.max(0, l.counter.limit - w.count);
      if (w.count > l.counter.limit) exceeded = true;
      if (!tightest || remaining < tightest.remaining) tightest = { limit: l.counter.limit, remaining, resetAt: w.resetAt };
    }
    if (!tightest) return;
    const resetSeconds = Math.ceil(tightest.resetAt / 1000);
    reply.header('x-ratelimit-limit', tightest.limit);
    reply.header('x-ratelimit-remaining', tightest.remaining);
    reply.header('x-ratelimit-reset', resetSeconds);
    if (exceeded) {
      reply.header('retry-after', Math.max(1, Math.ceil((tightest.resetAt - t) / 1000)));
      return reply.code(429).send(errorBody(opts.version, 'RATE_LIMIT', 'Too many requests: rate limit exceeded, retry after X-RateLimit-Reset'));
    }
  });
}
