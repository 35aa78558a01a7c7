import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { RateLimited } from './errors.js';

/** One budget of hits per key and window, counted by one of rate-limiter-flexible's stores. */
export class Limit {
  private lastFailureLogged = 0;

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

  /** A broken counter store (Redis gone) must not take the service down: allow, and say so in the log (every 10 s at most). */
  private failOpen(error: unknown): true {
    const now = Date.now();
    if (now - this.lastFailureLogged > 10_000) {
      this.lastFailureLogged = now;
      this.log.error({ err: error }, 'rate limit counters unavailable; allowing requests until they are back');
    }
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

/**
 * Where the counters live: this process's memory; Redis, shared by every instance (REDIS_URL);
 * or the primary of a node:cluster, shared by its workers (WORKERS without REDIS_URL).
 */
export type CounterStore = { kind: 'memory' } | { kind: 'redis'; client: Redis } | { kind: 'cluster' };

function limiter(store: CounterStore, options: { keyPrefix: string; points: number; duration: number }): RateLimiterAbstract {
  const keyPrefix = `guidon:${options.keyPrefix}`;
  switch (store.kind) {
    case 'redis':
      // Not ready: answer at once (and fail open) rather than queue the request behind a reconnect.
      return new RateLimiterRedis({ ...options, keyPrefix, storeClient: store.client, rejectIfRedisNotReady: true });
    case 'cluster':
      return new RateLimiterCluster({ ...options, keyPrefix, timeoutMs: 1000 });
    default:
      return new RateLimiterMemory({ ...options, keyPrefix });
  }
}

export function createRateLimits(config: Config['rateLimits'], log: FastifyBaseLogger, store: CounterStore = { kind: 'memory' }): RateLimits {
  const limit = (keyPrefix: string, points: number, duration: number) => new Limit(limiter(store, { keyPrefix, points, duration }), log);
  const optional = (keyPrefix: string, perMinute: number) => (perMinute > 0 ? limit(keyPrefix, perMinute, 60) : null);
  return {
    evaluate: optional('evaluate', config.evaluatePerMinute),
    register: optional('register', config.authPerMinute),
    login: optional('login', config.authPerMinute),
    failedLogin: limit('failed-login', 10, 15 * 60),
    forgotPassword: limit('forgot-password', 5, 60 * 60),
  };
}
