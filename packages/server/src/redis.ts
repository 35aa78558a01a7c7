import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import { LogThrottle } from './log-throttle.js';

/**
 * A Redis client that never makes a caller wait for Redis: with no connection, commands fail at
 * once (callers fail open) while ioredis keeps reconnecting in the background. Errors are logged
 * at most every 10 s, and its return once. ioredis is loaded only when REDIS_URL is set (start-up
 * time: docs/performance.md).
 */
export async function createRedis(url: string, log: FastifyBaseLogger, options: { queueWhileOffline?: boolean } = {}): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, {
    enableOfflineQueue: options.queueWhileOffline ?? false,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  const failureLog = new LogThrottle();
  redis.on('error', (error: Error) => {
    if (failureLog.due()) log.error({ err: error }, 'Redis connection failed; reconnecting');
  });
  redis.on('ready', () => {
    if (failureLog.recovered()) log.info('Redis connection back');
  });
  return redis;
}

/** Closes politely when connected, at once otherwise. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
  else redis.disconnect();
}
