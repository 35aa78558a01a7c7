import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import { RateLimited } from './errors.js';
import { LogThrottle } from './log-throttle.js';

const retryAfterSeconds = (state: RateLimiterRes) => Math.max(1, Math.ceil(state.msBeforeNext / 1000));

/** One budget of hits per key and window, counted by one of rate-limiter-flexible's stores. */
export class Limit {
  private readonly failureLog = new LogThrottle();
  /** The property under which hitOnce keeps a request's outcome, one per limit. */
  private readonly counted = Symbol('hit counted by this limit');
  /**
   * In-memory counters only (null otherwise): the keys counted, each with the end of its window,
   * so that a flood of keys (addresses, emails) neither grows memory without bound nor resets a
   * key being refused. `counting`: keys under their budget, least recently hit first; past
   * maxKeys the first is forgotten. `held`: keys that used their budget up, in the order they
   * did; never forgotten to make room for other keys, only past maxKeys held at once (then the
   * one held longest, its window most likely ended).
   */
  private readonly memory: { counting: Map<string, number>; held: Map<string, number> } | null;

  constructor(
    private readonly limiter: RateLimiterAbstract,
    private readonly log: FastifyBaseLogger,
    private readonly maxKeys: number | null = null,
  ) {
    this.memory = maxKeys === null ? null : { counting: new Map(), held: new Map() };
  }

  /** Keys this process holds counters for (in-memory counters only; 0 otherwise). */
  get trackedKeys(): number {
    return this.memory ? this.memory.counting.size + this.memory.held.size : 0;
  }

  /** Counts one hit; throws RateLimited when the key is over its budget. */
  async hit(key: string): Promise<void> {
    const refused = await this.consume(key);
    if (refused) throw new RateLimited(retryAfterSeconds(refused));
  }

  /**
   * Counts one hit for this request the first time it is asked; asked again for the same request,
   * gives the first outcome without counting. Evaluate's direct path counts a request before it may
   * hand it to Fastify, whose hook then asks too: one hit per request, whichever path answers.
   */
  hitOnce(request: object, key: string): Promise<void> {
    return ((request as Record<symbol, Promise<void> | undefined>)[this.counted] ??= this.hit(key));
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
    this.working();
    if (state && state.remainingPoints <= 0) throw new RateLimited(retryAfterSeconds(state));
  }

  /** Gives back one hit counted earlier (a login that turned out right). */
  async giveBack(key: string): Promise<void> {
    let state: RateLimiterRes;
    try {
      state = await this.limiter.reward(key, 1);
    } catch (error) {
      this.failOpen(error);
      return;
    }
    this.working();
    this.track(key, state);
  }

  /** The refusal when over budget; null when the hit is allowed. */
  private async consume(key: string): Promise<RateLimiterRes | null> {
    let state: RateLimiterRes;
    let refused: RateLimiterRes | null = null;
    try {
      state = await this.limiter.consume(key);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) {
        this.failOpen(error);
        return null;
      }
      state = refused = error;
    }
    this.working();
    this.track(key, state);
    return refused;
  }

  /** In-memory counters: notes the key's state after a hit or a give-back, then keeps within maxKeys. */
  private track(key: string, state: RateLimiterRes): void {
    if (!this.memory) return;
    const { counting, held } = this.memory;
    const now = Date.now();
    const windowEnd = now + state.msBeforeNext;
    if (state.remainingPoints > 0) {
      held.delete(key);
      counting.delete(key); // set again below: most recently hit last
      counting.set(key, windowEnd);
      this.keepWithinMax(counting, now);
    } else {
      counting.delete(key);
      held.set(key, windowEnd); // a key refused again keeps its place
      this.keepWithinMax(held, now);
    }
  }

  /** Forgets the first keys of `keys` (and their counts) until maxKeys remain. */
  private keepWithinMax(keys: Map<string, number>, now: number): void {
    for (const [key, windowEnd] of keys) {
      if (keys.size <= this.maxKeys!) return;
      keys.delete(key);
      // An ended window is gone from the store already; a running one loses its count and expiry timer.
      if (windowEnd > now) void this.limiter.delete(key).catch(() => undefined);
    }
  }

  /** A broken counter store (Redis gone) must not take the service down: allow, and say so in the log (every 10 s at most). */
  private failOpen(error: unknown): void {
    if (this.failureLog.due()) this.log.error({ err: error }, 'rate limit counters unavailable; allowing requests until they are back');
  }

  /** The counter store answered: after a logged failure, say once that limits hold again. */
  private working(): void {
    if (this.failureLog.recovered()) this.log.info('rate limit counters back; counting requests again');
  }
}

export interface RateLimits {
  evaluate: Limit | null;
  register: Limit | null;
  login: Limit | null;
  failedLogin: Limit;
  forgotPassword: Limit;
  /** Per client address, over forgot-password and reset-password together. */
  passwordReset: Limit | null;
  /** Per user: verification emails asked again (docs/api.md, Account). */
  resendVerification: Limit;
  /** Invitations (docs/api.md, Members): per project and per inviter, an hour… */
  invitationsPerProject: Limit;
  invitationsPerInviter: Limit;
  /** …to one address from one project a day (a cancelled one gives its count back)… */
  invitationsPerProjectAddress: Limit;
  /** …and from one inviter to one address a day, never given back (docs/adr/0011-proven-addresses.md). */
  invitationsPerInviterAddress: Limit;
  /** Imports per project, dry runs included (docs/flags-as-code.md): each may take a second of the database. */
  imports: Limit;
  /** Requests to POST /sdk/v1/events per SDK key or API token (docs/experiments.md). */
  events: Limit | null;
}

/** In-memory counters kept per limit at most: this many under their budget, and this many over it (Limit.memory). */
export const MAX_KEYS_IN_MEMORY = 10_000;

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
  const limit = (keyPrefix: string, points: number, duration: number) =>
    new Limit(limiter(store, { keyPrefix, points, duration }), log, store.kind === 'memory' ? MAX_KEYS_IN_MEMORY : null);
  const optional = (keyPrefix: string, perMinute: number) => (perMinute > 0 ? limit(keyPrefix, perMinute, 60) : null);
  return {
    evaluate: optional('evaluate', config.evaluatePerMinute),
    register: optional('register', config.authPerMinute),
    login: optional('login', config.authPerMinute),
    failedLogin: limit('failed-login', 10, 15 * 60),
    forgotPassword: limit('forgot-password', 5, 60 * 60),
    passwordReset: optional('password-reset', config.authPerMinute),
    resendVerification: limit('resend-verification', 5, 60 * 60),
    invitationsPerProject: limit('invitations-project', 50, 60 * 60),
    invitationsPerInviter: limit('invitations-inviter', 50, 60 * 60),
    invitationsPerProjectAddress: limit('invitations-project-address', 3, 24 * 60 * 60),
    invitationsPerInviterAddress: limit('invitations-inviter-address', 10, 24 * 60 * 60),
    imports: limit('imports-project', 30, 60),
    events: optional('events', config.eventsPerMinute),
  };
}
