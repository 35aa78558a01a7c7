import { createHash, randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { LogThrottle } from '../../log-throttle.js';

/**
 * Open streams per client (docs/sdk.md: at most STREAMS_PER_CLIENT per client address and SDK
 * key), counted where the rate limits count (docs/operations.md, Rate limits): with Redis, across every instance; otherwise in
 * this process.
 */
export interface OpenStreamCount {
  /** A place for one more stream of this client, or null when it holds `cap` already. Calling the answer gives the place back. */
  take(client: string, cap: number): Promise<(() => void) | null>;
  close(): void;
}

export function openStreamCount(redis: Redis | null, log: FastifyBaseLogger): OpenStreamCount {
  return redis ? new RedisOpenStreams(redis, log) : new LocalOpenStreams();
}

class LocalOpenStreams implements OpenStreamCount {
  private readonly open = new Map<string, number>();

  async take(client: string, cap: number): Promise<(() => void) | null> {
    return this.takeNow(client, cap);
  }

  takeNow(client: string, cap: number): (() => void) | null {
    const open = this.open.get(client) ?? 0;
    if (open >= cap) return null;
    this.open.set(client, open + 1);
    return () => {
      const left = (this.open.get(client) ?? 1) - 1;
      if (left > 0) this.open.set(client, left);
      else this.open.delete(client);
    };
  }

  close(): void {}
}

/**
 * A place held too long without being renewed is free again: an instance that died (SIGKILL, a
 * lost machine) cannot lock its clients out. Places are renewed every RENEW_MS, so three renewals
 * must fail in a row before a live stream's place lapses.
 */
const PLACE_TTL_MS = 45_000;
const RENEW_MS = 15_000;

/** Drops lapsed places, then adds one if fewer than the cap remain: 1 taken, 0 full. */
const TAKE_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/**
 * Each client's places are a sorted set in Redis (members: this instance's id and a number,
 * scores: when the place lapses), taken by one script so that two instances cannot both take the
 * last one. Redis away: the count falls back to this instance's own (a client is then capped per
 * instance, as without Redis), and never refuses because Redis cannot answer.
 */
class RedisOpenStreams implements OpenStreamCount {
  private readonly instance = randomUUID();
  private next = 0;
  /** Places this instance holds in Redis: member → key. */
  private readonly held = new Map<string, string>();
  private readonly fallback = new LocalOpenStreams();
  private readonly renewal: NodeJS.Timeout;
  private readonly failureLog = new LogThrottle();

  constructor(
    private readonly redis: Redis,
    private readonly log: FastifyBaseLogger,
  ) {
    this.renewal = setInterval(() => void this.renew(), RENEW_MS);
    this.renewal.unref();
  }

  async take(client: string, cap: number): Promise<(() => void) | null> {
    // The address and key hash are hashed again: a key of fixed length, and no address in Redis's key space.
    const key = `guidon:streams:${createHash('sha256').update(client).digest('base64url')}`;
    const member = `${this.instance}:${this.next++}`;
    let taken: unknown;
    try {
      taken = await this.redis.eval(TAKE_SCRIPT, 1, key, Date.now(), cap, Date.now() + PLACE_TTL_MS, member, PLACE_TTL_MS);
    } catch (error) {
      if (this.failureLog.due()) this.log.warn({ err: error }, 'open streams: Redis did not answer; counting on this instance meanwhile');
      return this.fallback.takeNow(client, cap);
    }
    if (this.failureLog.recovered()) this.log.info('open streams: counting in Redis again');
    if (taken !== 1) return null;
    this.held.set(member, key);
    return () => {
      if (!this.held.delete(member)) return;
      this.redis.zrem(key, member).catch(() => undefined); // lapses by itself otherwise
    };
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const lapses = Date.now() + PLACE_TTL_MS;
    const pipeline = this.redis.pipeline();
    // XX: a place already given back (or lapsed and taken by another) is not put back.
    for (const [member, key] of this.held) pipeline.zadd(key, 'XX', lapses, member).pexpire(key, PLACE_TTL_MS);
    await pipeline.exec().catch(() => undefined);
  }

  close(): void {
    clearInterval(this.renewal);
  }
}
