import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import { RateLimited } from './errors.js';

/**
 * One budget of hits per key and window. Counters live in memory now; the store is
 * rate-limiter-flexible's, so a Redis-backed limiter drops in without touching callers.
 */
export class Limit {
  constructor(
    private readonly limiter: RateLimiterAbstract,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Counts one hit; throws RateLimited when the key is over its budget. */
  async hit(key: string): Promise<void> {
    if (!(await this.tryHit(key))) throw new RateLimited(await this.retryAfter(key));
  }

  /** Counts one hit; false when the key is over its budget. */
  async tryHit(key: string): Promise<boolean> {
    try {
      await this.limiter.consume(key);
      return true;
    } catch (error) {
      if (error instanceof RateLimiterRes) return false;
      return this.failOpen(error);
    }
  }

  /** Throws RateLimited when the key has used its budget, without counting a hit. */
  async check(key: string): Promise<void> {
    try {
      const state = await this.limiter.get(key);
      if (state && state.remainingPoints <= 0) throw new RateLimited(Math.max(1, Math.ceil(state.msBeforeNext / 1000)));
    } catch (error) {
      if (error instanceof RateLimited) throw error;
      this.failOpen(error);
    }
  }

  private async retryAfter(key: string): Promise<number> {
    const state = await this.limiter.get(key).catch(() => null);
    return Math.max(1, Math.ceil((state?.msBeforeNext ?? 1000) / 1000));
  }

  /** A broken counter store must not take the service down: allow, and say so in the log. */
  private failOpen(error: unknown): true {
    this.log.error({ err: error }, 'rate limiter store failed; allowing the request');
    return true;
  }
}

export interface RateLimits {
  evaluate: Limit | null;
  register: Limit | null;
  login: Limit | null;
  failedLogin: Limit;
  forgotPassword: Limit;
}

export function createRateLimits(config: Config['rateLimits'], log: FastifyBaseLogger): RateLimits {
  const limit = (keyPrefix: string, points: number, duration: number) =>
    new Limit(new RateLimiterMemory({ keyPrefix, points, duration }), log);
  const optional = (keyPrefix: string, perMinute: number) => (perMinute > 0 ? limit(keyPrefix, perMinute, 60) : null);
  return {
    evaluate: optional('evaluate', config.evaluatePerMinute),
    register: optional('register', config.authPerMinute),
    login: optional('login', config.authPerMinute),
    failedLogin: limit('failed-login', 10, 15 * 60),
    forgotPassword: limit('forgot-password', 5, 60 * 60),
  };
}
