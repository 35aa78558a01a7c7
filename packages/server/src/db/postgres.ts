/** PostgreSQL: the pool as Kysely sees it (db/database.ts opens it; loaded only when DATABASE_URL names PostgreSQL). */
import { Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Database, OpenOptions } from './handle.js';
import { translateDriverError } from './errors.js';
import type { Schema } from './schema.js';

/**
 * A database that does not answer must not hold requests: a connection (or a free pool slot)
 * within 2 s, a statement within 30 s (server side), and an answer within 35 s even when the
 * server is unreachable (client side). Past them, requests get 503 (Unavailable).
 */
const POSTGRES_TIMEOUTS = { connectionTimeoutMillis: 2000, statement_timeout: 30_000, query_timeout: 35_000, keepAlive: true } as const;

/** The pool as Kysely sees it, with "database away" errors translated (db/errors.ts). */
function translatingPool(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect().catch((error: unknown) => Promise.reject(translateDriverError(error)));
      let broken: unknown;
      const wrapped = {
        query: (...args: unknown[]) =>
          (client.query as (...a: unknown[]) => Promise<unknown>)(...args).catch((error: unknown) => {
            const translatedError = translateDriverError(error);
            if (translatedError !== error) broken = error; // this connection is not reused
            throw translatedError;
          }),
        release: () => client.release(broken as Error | undefined),
      };
      return wrapped as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

/**
 * pg emits 'error' on a pooled client whose connection drops while it is checked out between
 * queries (or still connecting); with no listener Node ends the process. The pool and the query
 * see the failure anyway and the pool replaces the client, so this listener only keeps us alive.
 */
class PoolClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

export function openPostgres(url: string, options: OpenOptions): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10, ...POSTGRES_TIMEOUTS, Client: PoolClient });
  pool.on('error', (error) => options.onPoolError?.(error));
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: translatingPool(pool) }) });
  return {
    db,
    dialect: 'postgres',
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

