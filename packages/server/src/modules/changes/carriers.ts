/** The carriers that spread "project X changed" between the instances of the service. */
import cluster from 'node:cluster';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { sql } from 'kysely';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { LogThrottle } from '../../log-throttle.js';
import { createRedis } from '../../redis.js';

const CHANNEL = 'guidon_changes';

/** Carries "project X changed" to the other instances (processes) of the service. */
export interface ChangeBus {
  /** onMessage gets every message published by any instance; onReconnect, each time the bus comes back after a gap. */
  start(onMessage: (message: string) => void, onReconnect: () => void): Promise<void>;
  /**
   * transactional: the message is sent only if `within`, the change's transaction, commits
   * (PostgreSQL NOTIFY); the others are sent after the commit.
   */
  readonly transactional?: boolean;
  publish(message: string, within?: Db): Promise<void>;
  close(): Promise<void>;
}

/** PostgreSQL LISTEN/NOTIFY: one listening connection per process, reopened when it drops. */
export function postgresBus(db: Db, url: string, log: FastifyBaseLogger): ChangeBus {
  let listener: pg.Client | undefined;
  let closed = false;
  let retryMs = 250;
  // Each failed reconnection ends in lost(): logged at most every 10 s while PostgreSQL is away.
  const failureLog = new LogThrottle();

  async function listen(onMessage: (message: string) => void, onReconnect: () => void): Promise<void> {
    const { default: driver } = await import('pg'); // loaded only on PostgreSQL (db/postgres.ts)
    const connection = new driver.Client({ connectionString: url, connectionTimeoutMillis: 5000, keepAlive: true }); // an unreachable server must not hang the retry loop
    let alive = true;
    const lost = (error?: Error) => {
      if (!alive) return;
      alive = false;
      if (listener === connection) listener = undefined;
      connection.end().catch(() => undefined);
      if (closed) return;
      if (failureLog.due()) log.error({ err: error }, 'change notifications: lost the PostgreSQL connection; reconnecting');
      const again = () => listen(onMessage, onReconnect).then(onReconnect, () => undefined); // a failure schedules the next try
      setTimeout(again, retryMs).unref();
      retryMs = Math.min(retryMs * 2, 5000);
    };
    connection.on('notification', (notification) => notification.payload && onMessage(notification.payload));
    connection.on('error', lost);
    connection.on('end', () => lost());
    try {
      await connection.connect();
      await connection.query(`listen ${CHANNEL}`);
    } catch (error) {
      lost(error as Error);
      throw error;
    }
    listener = connection;
    retryMs = 250;
    if (failureLog.recovered()) log.info('change notifications: listening again');
  }

  return {
    start: (onMessage, onReconnect) => listen(onMessage, onReconnect),
    transactional: true,
    async publish(message, within = db) {
      await sql`select pg_notify(${CHANNEL}, ${message})`.execute(within);
    },
    async close() {
      closed = true;
      await listener?.end().catch(() => undefined);
    },
  };
}

/** At most this many notifications wait for the publisher's return; beyond, the others' revision check catches the change. */
const MAX_UNSENT = 10_000;

/** Redis pub/sub: a subscriber connection (ioredis resubscribes after a reconnect) and the shared client to publish. */
export function redisBus(publisher: Redis, subscriber: Redis, log: FastifyBaseLogger): ChangeBus {
  let closed = false;
  /**
   * Notifications the publisher could not send (it fails at once while away, see redis.ts), sent
   * when it is back: other instances may already listen again, and a change made meanwhile must
   * reach them even where no revision check runs. A set: a project changed twice is told once.
   */
  const unsent = new Set<string>();
  const send = async (message: string) => {
    try {
      await publisher.publish(CHANNEL, message);
    } catch (error) {
      if (unsent.size < MAX_UNSENT) unsent.add(message);
      throw error;
    }
  };
  publisher.on('ready', () => {
    const waiting = [...unsent];
    unsent.clear();
    for (const message of waiting) send(message).catch(() => {}); // kept again for the next return
  });
  /**
   * ioredis resubscribes after a reconnect only to channels it once subscribed to: the first
   * subscription is retried here until it succeeds (Redis may be down when the instance starts).
   */
  async function subscribe(onReconnect: () => void, retryMs: number): Promise<void> {
    if (closed) return;
    try {
      await subscriber.subscribe(CHANNEL);
      if (retryMs > 250) onReconnect(); // changes made while we were not listening
    } catch (error) {
      if (closed) return;
      if (retryMs === 250) log.error({ err: error }, 'change notifications: could not subscribe on Redis; retrying');
      setTimeout(() => void subscribe(onReconnect, Math.min(retryMs * 2, 5000)), retryMs).unref();
    }
  }
  return {
    async start(onMessage, onReconnect) {
      subscriber.on('message', (_channel: string, message: string) => onMessage(message));
      subscriber.on('ready', onReconnect);
      void subscribe(onReconnect, 250);
    },
    async publish(message) {
      await send(message);
    },
    async close() {
      closed = true;
      subscriber.disconnect();
    },
  };
}

interface ClusterChange {
  type: 'guidon:change';
  message: string;
}

const isClusterChange = (value: unknown): value is ClusterChange => (value as ClusterChange | null)?.type === 'guidon:change';

/** node:cluster workers on SQLite: through the primary, which relays to the other workers (relayClusterChanges). */
export function clusterBus(): ChangeBus {
  return {
    async start(onMessage) {
      process.on('message', (value) => isClusterChange(value) && onMessage(value.message));
    },
    async publish(message) {
      process.send?.({ type: 'guidon:change', message } satisfies ClusterChange);
    },
    async close() {},
  };
}

/**
 * The carrier for this deployment: Redis pub/sub when REDIS_URL is set, else PostgreSQL
 * LISTEN/NOTIFY, else (SQLite under WORKERS) the cluster's primary; a lone SQLite process needs none.
 */
export async function changeBusFor(config: Readonly<Config>, db: Db, redis: Redis | null, log: FastifyBaseLogger): Promise<ChangeBus | null> {
  if (redis && config.redisUrl) return redisBus(redis, await createRedis(config.redisUrl, log, { queueWhileOffline: true }), log);
  if (config.database.kind === 'postgres') return postgresBus(db, config.database.url, log);
  if (cluster.isWorker) return clusterBus();
  return null;
}

/** In the primary of a cluster: passes each worker's change to every other worker. */
export function relayClusterChanges(): void {
  cluster.on('message', (from, value) => {
    if (!isClusterChange(value)) return;
    for (const worker of Object.values(cluster.workers ?? {})) if (worker && worker !== from && worker.isConnected()) worker.send(value);
  });
}

