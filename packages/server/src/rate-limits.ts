import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { RateLimited } from './errors.js';

const retryAfterSeconds = (state: RateLimiterRes) => Math.max(1, Math.ceil(state.msBeforeNext / 1000));

/** One budget of hits per key and window, counted by one of rate-limiter-flexible's stores. */
export class Limit {
  private lastFailureLogged = 0;

  constructor(
    private readonly limiter: RateLimiterAbstract,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Counts one hit; throws RateLimited when the key is over its budget. */
  async hit(key: string): Promise<void> {
    const refused = await this.consume(key);
    if (refused) throw new RateLimited(retryAfterSeconds(refused));
  }

  /** Counts one hit; false when the key is over its budget. */
  async tryHit(key: string): Promise<boolean> {
    return (await this.consume(key)) === null;
  }

  /** Throws RateLimited when the key has used its budget, without counting a hit. */
  async check(key: string): Promise<void> {
    let state: RateLimiterRes | null;
    try {
      state = await this.limiter.get(key);
    } catch (error) {
      this.failOpen(error);
      return;
    }
    if (state && state.remainingPoints <= 0) throw new RateLimited(retryAfterSeconds(state));
  }

  /** The refusal when over budget; null when the hit is allowed. */
  private async consume(key: string): Promise<RateLimiterRes | null> {
    try {
      await this.limiter.consume(key);
      return null;
    } catch (error) {
      if (error instanceof RateLimiterRes) return error;
      this.failOpen(error);
      return null;
    }
  }

  /** A broken counter store (Redis gone) must not take the service down: allow, and say so in the log (every 10 s at most). */
  private failOpen(error: unknown): void {
    const now = Date.now();
    if (now - this.lastFailureLogged > 10_000) {
      this.lastFailureLogged = now;
      this.log.error({ err: error }, 'rate limit counters unavailable; allowing requests until they are back');
    }
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
